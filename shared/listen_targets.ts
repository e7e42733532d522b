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
 * A server asked for abstract sockets records where it listens in every case: the two names;
 * `tcp` where it listens on 127.0.0.1 instead (Landlock without scoping), its confinements then
 * closing those ports; null for a port whose listener failed, until it listens again. A relay
 * never dials 127.0.0.1:9000 or 9001 without a record that says `tcp`: with the server on
 * abstract sockets nothing keeps a process inside from listening there, and every request
 * carries a token.
 *
 * Why names at random, and drawn again whenever the server listens again: a confined process
 * may bind any abstract name (Landlock scopes `connect`, not `bind`); while the server holds a
 * name nobody can bind it, and a name the server gave up is marked down in the record as soon as
 * the server learns of it, and never dialled again. (Between the kernel closing a failed
 * listener and the server marking it down, a relay's `open` could still dial the old name: a
 * process inside would have to bind that name in that moment, after exhausting the server's
 * descriptors, which is what ends a listener.)
 *
 * @module
 */

/**
 * Where a connection to one of the server's ports goes: an abstract socket, TCP inside, or
 * nowhere (`none`: the server's port while it is not listening, with why).
 */
export type ListenTarget =
  | { transport: "unix"; path: string }
  | { transport: "tcp"; hostname: string; port: number }
  | { transport: "none"; why: string };

/**
 * The ports a sandbox's relay is asked for to reach its server (HTTP and the PTY WebSocket).
 * They never fall back to `127.0.0.1:<port>` unless the server's record says it listens there:
 * on abstract sockets nothing keeps a process inside from listening on 127.0.0.1:9000, and the
 * client's requests carry its token.
 */
export const SERVER_PORTS: readonly number[] = [9000, 9001];

/** What the record holds for one port: an abstract name, `tcp`, or null while it is down. */
type RecordValue = string | null;

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
 * Record where the server's `port`s are (replacing any earlier record): an abstract name, `tcp`
 * (it listens on `127.0.0.1:<port>`, where its confinements close the port), or null (not
 * listening now: its listener failed and it is listening again). Returns the file's text for
 * other relays.
 */
export function recordListenTargets(ports: Readonly<Record<number, RecordValue>>): string {
  recorded.clear();
  for (const [port, value] of Object.entries(ports)) {
    const target = targetOf(Number(port), value);
    if (target) recorded.set(Number(port), target);
  }
  return JSON.stringify(ports);
}

/** A record's value as a target, or undefined when it is not one the server could write. */
function targetOf(port: number, value: unknown): ListenTarget | undefined {
  if (value === null) {
    return { transport: "none", why: `the server is not listening on ${port} now` };
  }
  if (value === "tcp") return { transport: "tcp", hostname: "127.0.0.1", port };
  return isOurName(value) ? { transport: "unix", path: value } : undefined;
}

/**
 * Where a connection to `port` inside the sandbox goes: as the record says; else, for the
 * server's own ports ({@linkcode SERVER_PORTS}), nowhere (no record yet: the server has not
 * listened); else `127.0.0.1:<port>`. `record` is a file's record
 * ({@linkcode parseListenTargets}); without one, this process's own.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listenTarget, parseListenTargets } from "./listen_targets.ts";
 * const name = "\0sandbar-" + "0".repeat(32) + "-9000";
 * const record = parseListenTargets(JSON.stringify({ 9000: name, 9001: null }));
 * assert.deepEqual(listenTarget(9000, record), { transport: "unix", path: name });
 * assert.equal(listenTarget(9001, record).transport, "none");
 * assert.deepEqual(listenTarget(8080, record), { transport: "tcp", hostname: "127.0.0.1", port: 8080 });
 * // No record at all: the server's ports go nowhere, never to whatever listens on them inside.
 * assert.equal(listenTarget(9000, new Map()).transport, "none");
 * assert.equal(listenTarget(9001, parseListenTargets(JSON.stringify({ 9001: "tcp" }))).transport, "tcp");
 * ```
 */
export function listenTarget(
  port: number,
  record: ReadonlyMap<number, ListenTarget> = recorded,
): ListenTarget {
  const target = record.get(port);
  if (target) return target;
  if (SERVER_PORTS.includes(port)) {
    return { transport: "none", why: `the server has not said where it listens on ${port} yet` };
  }
  return { transport: "tcp", hostname: "127.0.0.1", port };
}

/**
 * The record in a {@linkcode LISTEN_TARGETS_FILE}'s text; entries that are not a port and a
 * value the server writes (an abstract name of ours, `tcp`, null) are left out (the server wrote
 * it; nothing else can), and so are a text that is not a record's (then the server's ports go
 * nowhere).
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
    if (!Number.isInteger(n) || n <= 0 || n >= 65536) continue;
    const target = targetOf(n, path);
    if (target) record.set(n, target);
  }
  return record;
}
