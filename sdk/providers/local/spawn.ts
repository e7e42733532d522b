/**
 * Starting a sandbox's supervisor fully detached: `setsid --fork` makes it the leader of a new
 * session whose parent is not this process (so it outlives it, is never our zombie, and a
 * terminal's Ctrl-C does not reach it). Its stderr goes to a file beside the sandbox; its
 * stdout is a pipe we read its one ready (or error) line from, and then let go.
 *
 * @module
 */

import { join } from "node:path";
import { onPath } from "./on_path.ts";

/** The supervisor's one line. */
export type ReadySignal = { event: "ready"; pid: number } | { event: "error"; message: string };

/** A started supervisor. */
export interface SpawnedSupervisor {
  /** Its stdout. */
  stdout: ReadableStream<Uint8Array>;
  /** The `setsid` (or, without it, the supervisor) process. */
  launcher: Deno.ChildProcess;
  /** Where its stderr goes. */
  errorLog: string;
  /** True when `launcher` is a short-lived `setsid` to be reaped. */
  forked: boolean;
}

// The supervisor reads /proc (pause, kill), which Deno allows only with --allow-all. Without
// `--unstable-lazy-dynamic-imports` Deno loads every module a dynamic import names before the
// first line runs: for the supervisor that is the egress proxy and its X.509 library (about 60
// files), which only a sandbox with a `network` section imports; with it the supervisor's start
// is about 4 ms shorter (median of 12, 33.5 against 30 ms to exit, Deno's own floor 16 ms).
const FLAGS = [
  "run",
  "-A",
  "--no-config",
  "--no-lock",
  "--no-prompt",
  "--unstable-lazy-dynamic-imports",
];

/**
 * Start `deno run supervisor.ts ARGS…` detached; `script` is a path or a URL, `flags` extra
 * `deno run` flags for it. Its stderr is appended to `errorLog`, by default `supervisor.log` in
 * the directory `ARGS[0]`.
 */
export function spawnSupervisor(
  script: string,
  flags: readonly string[],
  args: string[],
  errorLog: string = join(args[0], "supervisor.log"),
): SpawnedSupervisor {
  // `-A` covers the `--allow-*` flags, and Deno refuses them beside it.
  const extra = flags.filter((f) => !FLAGS.includes(f) && !f.startsWith("--allow-"));
  const deno = [Deno.execPath(), ...FLAGS, ...extra, script, ...args];
  const setsid = onPath("setsid");
  // `exec … 2>>LOG` gives the supervisor a stderr that lives as long as it does.
  const sh = ["/bin/sh", "-c", 'exec "$@" 2>>"$0"', errorLog, ...deno];
  const argv = setsid ? [setsid, "--fork", ...sh] : sh;
  const launcher = new Deno.Command(argv[0], {
    args: argv.slice(1),
    cwd: "/",
    stdin: "null",
    stdout: "piped",
    stderr: "null",
    detached: !setsid,
  }).spawn();
  if (!setsid) launcher.unref();
  return { stdout: launcher.stdout, launcher, errorLog, forked: setsid !== null };
}

/** Read the supervisor's ready line (or its error), within `timeoutMs`. */
export async function readySignal(
  spawned: SpawnedSupervisor,
  timeoutMs: number,
): Promise<ReadySignal> {
  const reader = spawned.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), timeoutMs);
  });
  try {
    while (true) {
      const chunk = await Promise.race([reader.read(), late]);
      if (chunk === null) {
        return { event: "error", message: `no answer from the supervisor in ${timeoutMs} ms` };
      }
      if (chunk.done) break;
      text += chunk.value;
      const complete = text.split("\n").slice(0, -1);
      const line = complete.find((l) => l.startsWith('{"event":'));
      if (line) return JSON.parse(line) as ReadySignal;
    }
    const stderr = await Deno.readTextFile(spawned.errorLog).catch(() => "");
    return {
      event: "error",
      message: `the supervisor exited without a word${stderr ? `:\n${stderr.slice(-4000)}` : ""}`,
    };
  } finally {
    clearTimeout(timer);
    await reader.cancel().catch(() => {});
    if (spawned.forked) await spawned.launcher.status.catch(() => {});
  }
}
