/**
 * The host of a home's sandboxes: one detached process that supervises every sandbox with
 * bubblewrap of one `$SANDBAR_HOME` and package, in place of a supervisor process each. A Deno
 * runtime idling as a sandbox's supervisor held 16.3 MiB; one more supervision in a shared
 * process holds about 1.8 MiB, and a create no longer waits for a Deno process to start.
 *
 * ```sh
 * deno run … host.ts $SANDBAR_HOME/host/<package>.sock
 * ```
 *
 * The first create that finds none answering starts it (`host_client.ts`), and it ends on its own
 * {@linkcode IDLE_MS} after its last sandbox did. It prints one line on stdout, as a supervisor
 * does (`{"event":"ready","pid":…}` once it listens), and its stderr goes to `<package>.log`
 * beside the socket.
 *
 * On the socket a client sends one line, the path of a sandbox directory of this home whose
 * state the SDK wrote; the host answers `hosted <pid>` at once, then the supervisor's one line
 * (`ready` or `error`, see `spawn.ts`), and closes. A connection that ends with no answer was
 * never taken (the host was leaving): the client starts another host.
 *
 * What sharing costs: when this process dies, every sandbox it hosts ends with it (bubblewrap's
 * `--die-with-parent`), as one sandbox ends with its own supervisor; a paused one keeps its files
 * and is woken by the next `connect`. A bug in one sandbox's supervision is logged here and does
 * not take the process down. Sandboxes without bubblewrap keep a supervisor process each: their
 * process tree is the supervisor's own.
 *
 * @module
 */

import { basename, dirname } from "node:path";
import { supervise, type Supervisor } from "./supervisor.ts";
import { readUntil, writeAll } from "./splice.ts";
import type { ReadySignal } from "./spawn.ts";

/** How long the host stays with no sandbox, for the next create of a program that makes several. */
export const IDLE_MS = 2000;

const NEWLINE = new Uint8Array([10]);
/** A sandbox directory's path is far shorter: a Unix socket's path is at most 107 bytes. */
const MAX_LINE = 4096;

/** Serve the home's sandboxes on `socket` until the last has ended and {@linkcode IDLE_MS} passed. */
async function host(socket: string): Promise<void> {
  const home = dirname(dirname(socket));
  const live = new Set<Supervisor>();
  /** The sandbox directories whose start is under way (a second ask for one is refused). */
  const starting = new Set<string>();
  let answering = 0;
  let listener: Deno.UnixListener | null = null;
  let idle: ReturnType<typeof setTimeout> | undefined;

  const closeListener = () => {
    if (!listener) return;
    listener.close();
    listener = null;
    // Only our own: a host started after this one decided to leave may own the name by now.
    try {
      if (Deno.statSync(socket).ino === ownInode) Deno.removeSync(socket);
    } catch { /* gone */ }
  };
  const leaveWhenIdle = () => {
    clearTimeout(idle);
    if (live.size > 0 || answering > 0) return;
    if (!listener) Deno.exit(0);
    idle = setTimeout(() => {
      if (live.size > 0 || answering > 0) return;
      closeListener();
      leaveWhenIdle();
    }, IDLE_MS);
  };

  const answer = async (conn: Deno.UnixConn) => {
    answering++;
    clearTimeout(idle);
    try {
      const line = await readUntil(conn, NEWLINE, MAX_LINE);
      if (!line) return;
      const path = new TextDecoder().decode(line.head);
      // The socket is in the user's home (mode 0700), but a path is still input: only a sandbox
      // directory of this home.
      if (dirname(dirname(path)) !== home || !/^[a-z0-9]+$/.test(basename(path))) {
        const refused: ReadySignal = { event: "error", message: `not a sandbox of ${home}` };
        await writeAll(conn, new TextEncoder().encode(`${JSON.stringify(refused)}\n`));
        return;
      }
      if (starting.has(path)) {
        const twice: ReadySignal = { event: "error", message: `${path} is being started` };
        await writeAll(conn, new TextEncoder().encode(`${JSON.stringify(twice)}\n`));
        return;
      }
      await writeAll(conn, new TextEncoder().encode(`hosted ${Deno.pid}\n`));
      let said: ReadySignal = { event: "error", message: "the supervisor said nothing" };
      let ended = false;
      let sup: Supervisor | null = null;
      starting.add(path);
      try {
        sup = await supervise(path, {
          say: (event) => said = event,
          ended: () => {
            ended = true;
            if (sup) live.delete(sup);
            leaveWhenIdle();
          },
          shared: true,
        });
      } catch (e) {
        said = { event: "error", message: (e as Error).message };
      } finally {
        starting.delete(path);
      }
      if (sup && !ended) live.add(sup);
      await writeAll(conn, new TextEncoder().encode(`${JSON.stringify(said)}\n`));
    } catch (e) {
      console.error(`sandbar host: ${(e as Error).message}`);
    } finally {
      try {
        conn.close();
      } catch { /* closed */ }
      answering--;
      leaveWhenIdle();
    }
  };

  // One sandbox's supervision failing in a way nobody awaited must not end the others.
  globalThis.addEventListener("unhandledrejection", (e) => {
    e.preventDefault();
    console.error(`sandbar host: ${e.reason?.stack ?? e.reason}`);
  });
  globalThis.addEventListener("error", (e) => {
    e.preventDefault();
    console.error(`sandbar host: ${e.error?.stack ?? e.message}`);
  });
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    Deno.addSignalListener(signal, async () => {
      closeListener();
      await Promise.all([...live].map((sup) => sup.stop()));
      Deno.exit(0);
    });
  }

  await Deno.remove(socket).catch(() => {});
  listener = Deno.listen({ transport: "unix", path: socket });
  const ownInode = Deno.statSync(socket).ino;
  console.log(JSON.stringify({ event: "ready", pid: Deno.pid } satisfies ReadySignal));
  leaveWhenIdle();
  try {
    for await (const conn of listener) answer(conn);
  } catch { /* closed: it is leaving */ }
}

if (import.meta.main) {
  const socket = Deno.args[0];
  if (!socket || basename(dirname(socket)) !== "host") {
    console.error("usage: host.ts SANDBAR_HOME/host/PACKAGE.sock");
    Deno.exit(2);
  }
  try {
    await host(socket);
  } catch (e) {
    console.log(JSON.stringify({ event: "error", message: (e as Error).message }));
    Deno.exit(1);
  }
}
