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
 * @module
 */

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
}

/**
 * Start a program as the session leader on a terminal.
 */
export function spawnOnTerminal(options: SpawnOnTerminalOptions): Deno.ChildProcess {
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
