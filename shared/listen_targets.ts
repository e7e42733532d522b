/**
 * Where a sandbox's server really listens, by the port number the host asks its relay for.
 *
 * The SDK's gateways dial the sandbox's server as port 9000 (HTTP) and 9001 (PTY WebSocket)
 * through the relay (`open <nonce> <port>`, `sdk/providers/local/relay_open.ts`). A server
 * started with `--abstract-sockets` where Landlock scopes abstract Unix sockets (ABI 6) listens
 * on two abstract sockets with names drawn at random instead (`server/serve.ts`), and records
 * here that 9000 and 9001 are those sockets; every other port stays `127.0.0.1:<port>` (the
 * user's own services). The record lives in two places:
 *
 * - in this module, for the relay preloaded into the server's process (`local/relay.ts`): the
 *   same module instance, so no file is read and nothing outside the process can change it;
 * - in {@linkcode LISTEN_TARGETS_FILE} in the server's state directory, for a relay started in
 *   the sandbox as a process of its own (the docker provider's exec'd `relay.ts`, one per SDK
 *   process that connects). No process the server starts can write that directory (it is
 *   withheld from every confinement), and only an abstract name of ours is taken from it.
 *
 * Why names at random, and drawn again whenever the server listens again: a confined process
 * may bind any abstract name Landlock does not scope `bind`; while the server holds a name nobody
 * can bind it, and a name the server gave up is never dialled again.
 *
 * @module
 */

/** Where a connection to one of the server's ports goes. */
export type ListenTarget =
  | { transport: "unix"; path: string }
  | { transport: "tcp"; hostname: string; port: number };

/** The record's file in the server's state directory (JSON: port to abstract name). */
export const LISTEN_TARGETS_FILE = "listen_targets.json";

/** The variable that names the record's file to a relay of its own (docker's exec'd relay). */
export const LISTEN_TARGETS_ENV = "SANDBAR_LISTEN_TARGETS";

/** The prefix of every abstract socket name the server draws. */
export const SOCKET_NAME_PREFIX = "sandbar-";

const recorded = new Map<number, ListenTarget>();

/**
 * A fresh abstract socket name for the server's `port`: `\0sandbar-<128 random bits>-<port>`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { drawSocketName } from "./listen_targets.ts";
 * const name = drawSocketName(9000);
 * assert.match(name, /^\0sandbar-[0-9a-f]{32}-9000$/);
 * assert.notEqual(name, drawSocketName(9000));
 * ```
 */
export function drawSocketName(port: number): string {
  const hex = Array.from(
    crypto.getRandomValues(new Uint8Array(16)),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
  return `\0${SOCKET_NAME_PREFIX}${hex}-${port}`;
}

/** Whether `path` is an abstract socket name the server could have drawn. */
function isOurName(path: unknown): path is string {
  return typeof path === "string" && /^\0sandbar-[0-9a-f]{32}-\d{1,5}$/.test(path);
}

/**
 * Record that the server's `port`s are these abstract sockets (replacing any earlier record),
 * and return the file's text for other relays.
 */
export function recordListenTargets(sockets: Readonly<Record<number, string>>): string {
  recorded.clear();
  for (const [port, path] of Object.entries(sockets)) {
    recorded.set(Number(port), { transport: "unix", path });
  }
  return JSON.stringify(sockets);
}

/**
 * Where a connection to `port` inside the sandbox goes: the socket recorded for it, else
 * `127.0.0.1:<port>`. `record` is a file's record ({@linkcode parseListenTargets}); without
 * one, this process's own.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listenTarget, parseListenTargets } from "./listen_targets.ts";
 * const name = "\0sandbar-" + "0".repeat(32) + "-9000";
 * const record = parseListenTargets(JSON.stringify({ 9000: name }));
 * assert.deepEqual(listenTarget(9000, record), { transport: "unix", path: name });
 * assert.deepEqual(listenTarget(8080, record), { transport: "tcp", hostname: "127.0.0.1", port: 8080 });
 * ```
 */
export function listenTarget(
  port: number,
  record: ReadonlyMap<number, ListenTarget> = recorded,
): ListenTarget {
  return record.get(port) ?? { transport: "tcp", hostname: "127.0.0.1", port };
}

/**
 * The record in a {@linkcode LISTEN_TARGETS_FILE}'s text; entries that are not a port and an
 * abstract name of ours are left out (the server wrote it; nothing else can).
 */
export function parseListenTargets(text: string): Map<number, ListenTarget> {
  const record = new Map<number, ListenTarget>();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return record;
  }
  if (typeof value !== "object" || value === null) return record;
  for (const [port, path] of Object.entries(value)) {
    const n = Number(port);
    if (Number.isInteger(n) && n > 0 && n < 65536 && isOurName(path)) {
      record.set(n, { transport: "unix", path });
    }
  }
  return record;
}
