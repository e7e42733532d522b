/**
 * Handing a sandbox to its home's host (`host.ts`), and starting the host when none answers.
 *
 * The host's socket is named by the package (`packageFingerprint`), so a changed package or
 * Deno gets a host of its own and is never supervised by older code. Two creates that find no
 * host start one between them: the second waits on the first's lock file, then finds it.
 *
 * @module
 */

import { join } from "node:path";
import type { PackageSource } from "./package_source.ts";
import { packageFingerprint } from "./pool.ts";
import { type ReadySignal, readySignal, spawnSupervisor } from "./spawn.ts";
import { readUntil, writeAll } from "./splice.ts";

const NEWLINE = new Uint8Array([10]);
/** How long a host may take to start and listen. */
const HOST_START_MS = 30_000;
/** The host's log is cut when a new host starts and it has grown past this. */
const LOG_LIMIT = 1024 * 1024;
/** How often a connection the host closed untaken is tried again (it was leaving). */
const TRIES = 3;

/** The host's socket of `home` for the package with `fingerprint`. */
export function hostSocket(home: string, fingerprint: string): string {
  return join(home, "host", `${fingerprint.slice(0, 16)}.sock`);
}

/**
 * Have the sandbox whose state is written in `sandboxDir` (of `home`) started and supervised by
 * the home's host: the supervisor's one line, within `timeoutMs` of the host taking it.
 */
export async function superviseInHost(
  home: string,
  source: PackageSource,
  sandboxDir: string,
  timeoutMs: number,
): Promise<ReadySignal> {
  const socket = hostSocket(home, await packageFingerprint());
  for (let attempt = 1;; attempt++) {
    let conn: Deno.UnixConn;
    try {
      conn = await connectOrStart(socket, source);
    } catch (e) {
      return { event: "error", message: (e as Error).message };
    }
    const timer = setTimeout(() => conn.close(), timeoutMs);
    try {
      await writeAll(conn, new TextEncoder().encode(`${sandboxDir}\n`));
      const taken = await readUntil(conn, NEWLINE, 64 * 1024);
      if (!taken) {
        if (attempt < TRIES) continue;
        return { event: "error", message: `the host at ${socket} closed ${TRIES} times untaken` };
      }
      const first = new TextDecoder().decode(taken.head);
      if (first.startsWith('{"event":')) return JSON.parse(first) as ReadySignal;
      const said = await lineAfter(conn, taken.rest);
      if (said) return JSON.parse(said) as ReadySignal;
      const log = await Deno.readTextFile(logOf(socket)).catch(() => "");
      return {
        event: "error",
        message: `the host ended or timed out while starting it${
          log ? `; its log ends:\n${log.slice(-4000)}` : ""
        }`,
      };
    } catch (e) {
      if (attempt < TRIES) continue;
      return { event: "error", message: `the host at ${socket}: ${(e as Error).message}` };
    } finally {
      clearTimeout(timer);
      try {
        conn.close();
      } catch { /* closed by the timer */ }
    }
  }
}

/** The next line on `conn` after the bytes `rest` already read, or null when it ended first. */
async function lineAfter(conn: Deno.UnixConn, rest: Uint8Array): Promise<string | null> {
  const at = rest.indexOf(10);
  if (at >= 0) return new TextDecoder().decode(rest.subarray(0, at));
  const line = await readUntil(conn, NEWLINE, 64 * 1024).catch(() => null);
  if (!line) return null;
  const whole = new Uint8Array(rest.length + line.head.length);
  whole.set(rest);
  whole.set(line.head, rest.length);
  return new TextDecoder().decode(whole);
}

function logOf(socket: string): string {
  return socket.replace(/\.sock$/, ".log");
}

async function connect(socket: string): Promise<Deno.UnixConn | null> {
  try {
    return await Deno.connect({ transport: "unix", path: socket });
  } catch {
    return null;
  }
}

/** A connection to the host, started first when none answers. */
async function connectOrStart(socket: string, source: PackageSource): Promise<Deno.UnixConn> {
  const found = await connect(socket);
  if (found) return found;
  await Deno.mkdir(join(socket, ".."), { recursive: true, mode: 0o700 });
  const lock = await Deno.open(`${socket}.lock`, { create: true, write: true, mode: 0o600 });
  try {
    await lock.lock(true);
    const started = await connect(socket); // by the creator that held the lock before us
    if (started) return started;
    const log = logOf(socket);
    const size = (await Deno.stat(log).catch(() => null))?.size ?? 0;
    if (size > LOG_LIMIT) await Deno.truncate(log, 0).catch(() => {});
    const spawned = spawnSupervisor(
      source.module("sdk/providers/local/host.ts"),
      source.runFlags,
      [socket],
      log,
    );
    const signal = await readySignal(spawned, HOST_START_MS);
    if (signal.event !== "ready") throw new Error(`the host did not start: ${signal.message}`);
    const conn = await connect(socket);
    if (!conn) throw new Error(`the host started but does not answer at ${socket}`);
    return conn;
  } finally {
    lock.close(); // and with it the lock
  }
}
