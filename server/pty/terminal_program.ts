/**
 * Starting a program on a pseudo-terminal as the leader of a new session, so the terminal is
 * its controlling terminal (job control, Ctrl-C, `SIGWINCH`).
 *
 * `Deno.Command` cannot pass a descriptor to a child, so the child opens the terminal itself:
 * `setsid` makes a new session, then `sh` (now session leader, without a controlling terminal)
 * opens `/dev/pts/N` without `O_NOCTTY`, which makes it the controlling terminal, puts it on
 * descriptors 0, 1 and 2 and `exec`s the program. The program keeps `sh`'s process id, so the
 * child's status is the program's exit status and its pid is the session id. A Deno child is
 * not a process-group leader, so `setsid` does not fork; `-w` makes it wait and pass the status
 * through should it ever have to.
 *
 * Where processes are confined (see `server/confine/`), the same `sh` is started instead by
 * `posix_spawn` with `POSIX_SPAWN_SETSID` on the identity's confined spawner thread, so the
 * terminal's shell and all it runs are confined like every other process; its exit is noticed
 * from `SIGCHLD` and it is reaped with `waitpid`, as the process group's children are.
 *
 * @module
 */

import type { Spawner } from "../confine/spawner.ts";
import { closeFd, cString, libc, O_CLOEXEC, O_RDWR, WNOHANG } from "../libc/index.ts";
import { decodeWaitStatus } from "../process/child.ts";
import { exitWatch } from "../process/exit_watch.ts";
import { spawnLeader } from "../process/posix_spawn.ts";

/** What the terminal keeps of its shell: its pid, its end, and a way to signal it. */
export interface TerminalChild {
  /** The shell's pid (also its session id). */
  readonly pid: number;
  /** Resolves once it has exited and been reaped. */
  readonly status: Promise<{ code: number; signal: Deno.Signal | null }>;
  /** Signal the shell itself; throws once it has been reaped. */
  kill(signal: Deno.Signal): void;
}

/** The wrapper script; `$1` is the terminal's path, the rest the program and its arguments. */
const OPEN_TTY_AND_EXEC = 'tty=$1; shift; exec "$@" <>"$tty" >&0 2>&0';

const SETSID_CANDIDATES = ["/usr/bin/setsid", "/bin/setsid"];
const SH_CANDIDATES = ["/bin/sh", "/usr/bin/sh"];

function firstExisting(candidates: string[], what: string): string {
  for (const p of candidates) {
    try {
      if (Deno.statSync(p).isFile) return p;
    } catch { /* try the next */ }
  }
  throw new Error(`${what} not found (looked at ${candidates.join(", ")})`);
}

let tools: { setsid: string; sh: string } | undefined;

/** What {@linkcode spawnOnTerminal} starts. */
export interface SpawnOnTerminalOptions {
  /** The terminal's slave path, `/dev/pts/N`. */
  tty: string;
  /** The program, absolute or a name looked up in `env.PATH`. */
  program: string;
  /** Its arguments. */
  args: readonly string[];
  /** Working directory (absolute). */
  cwd: string;
  /** The whole environment of the program (nothing is inherited). */
  env: Record<string, string>;
  /** The confined thread to start it on; none: `Deno.Command`, unconfined. */
  spawner?: Spawner;
}

/** Start the wrapper natively on `spawner`; its stdout and stderr are `/dev/null` until it execs. */
function spawnNatively(argv: string[], options: SpawnOnTerminalOptions, spawner: Spawner) {
  const c = libc();
  const devNull = c.open(cString("/dev/null"), O_RDWR | O_CLOEXEC, 0);
  if (devNull < 0) throw new Error("cannot open /dev/null");
  let pid: number;
  try {
    pid = spawnLeader(
      argv,
      options.cwd,
      options.env,
      { stdin: null, stdout: devNull, stderr: devNull },
      true,
      spawner,
    );
  } finally {
    closeFd(devNull);
  }
  let reaped = false;
  const status = new Promise<{ code: number; signal: Deno.Signal | null }>((resolve) => {
    exitWatch.watch(pid, () => {
      const raw = new Int32Array(1);
      c.waitpid(pid, raw, WNOHANG);
      reaped = true;
      const s = decodeWaitStatus(raw[0]);
      resolve({ code: s.code, signal: s.signal as Deno.Signal | null });
    });
  });
  return {
    pid,
    status,
    kill(signal: Deno.Signal) {
      if (reaped) throw new Error("the terminal's shell has exited");
      Deno.kill(pid, signal);
    },
  };
}

/**
 * Start a program as the session leader on a terminal.
 */
export function spawnOnTerminal(options: SpawnOnTerminalOptions): TerminalChild {
  if (options.spawner) {
    const sh = firstExisting(SH_CANDIDATES, "sh");
    const argv = [sh, "-c", OPEN_TTY_AND_EXEC, "sandbar-pty", options.tty, options.program];
    return spawnNatively([...argv, ...options.args], options, options.spawner);
  }
  tools ??= {
    setsid: firstExisting(SETSID_CANDIDATES, "setsid (util-linux)"),
    sh: firstExisting(SH_CANDIDATES, "sh"),
  };
  return new Deno.Command(tools.setsid, {
    args: [
      "-w",
      tools.sh,
      "-c",
      OPEN_TTY_AND_EXEC,
      "sandbar-pty",
      options.tty,
      options.program,
      ...options.args,
    ],
    cwd: options.cwd,
    env: options.env,
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
}
