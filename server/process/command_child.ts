/**
 * The fallback way to start a group leader, where libc's `posix_spawn` is not usable (not Linux,
 * not glibc, no `--allow-ffi`, or `SANDBAR_PROCESS_SPAWN=command`): `Deno.Command`.
 *
 * `Deno.Command` has no `setpgid` option. Its `detached: true` makes the child call `setsid()`,
 * but through a `pre_exec` hook that turns Deno's fast `posix_spawn` into a `fork()` of the whole
 * runtime, about 7 ms a spawn on the test machine. So the program is started through util-linux's
 * `setsid` instead (one extra `exec`, about 1 ms), which makes it the leader of a new session and
 * process group whose id is its pid: `setsid` does not fork when, as here, its caller is not a
 * group leader. `detached` is the fallback where `setsid` is missing.
 *
 * Deno reaps the leader, so the group's leftovers can only be killed after that (a pid reused in
 * between is the accepted risk of this path; the native path kills before it reaps).
 *
 * Under a process tree's cgroup, `Deno.Command` cannot start the child inside it, and moving it
 * a moment after the start lets a quick `setsid prog &` out first. So the child is started
 * through `/bin/sh`, which moves itself into the tree (writing "0", itself, to the tree's v1
 * `tasks`: the shell is one thread) and only then `exec`s the program: nothing of the caller's
 * runs outside the tree, and a failed write runs nothing at all.
 *
 * @module
 */

import type { ChildSpec, ChildStatus, ChunkListener, SpawnedChild } from "./child.ts";
import { killGroup } from "./child.ts";
import { resolveProgram } from "./locate_program.ts";
import { spawnCgroup } from "./trees.ts";
import type { StreamName } from "./output.ts";

let setsidPath: string | null | undefined;

/** util-linux's `setsid`, if installed. */
function setsid(): string | null {
  if (setsidPath !== undefined) return setsidPath;
  for (const candidate of ["/usr/bin/setsid", "/bin/setsid"]) {
    try {
      if (Deno.statSync(candidate).isFile) return (setsidPath = candidate);
    } catch { /* next */ }
  }
  return (setsidPath = null);
}

/**
 * A child started by `Deno.Command`, through `setsid` where installed.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { CommandChild } from "./command_child.ts";
 * const out: string[] = [];
 * const env = { PATH: "/usr/bin:/bin" };
 * const child = new CommandChild({ argv: ["sh", "-c", "echo hi"], cwd: "/", env, stdin: false },
 *   (_type, bytes) => out.push(new TextDecoder().decode(bytes)));
 * assert.equal((await child.status).code, 0);
 * await child.drained;
 * assert.equal(out.join(""), "hi\n");
 * ```
 */
export class CommandChild implements SpawnedChild {
  readonly pid: number;
  readonly status: Promise<ChildStatus>;
  readonly drained: Promise<void>;
  readonly #child: Deno.ChildProcess;
  readonly #readers: ReadableStreamDefaultReader<Uint8Array>[];
  #stdin: WritableStreamDefaultWriter<Uint8Array> | null = null;

  /** Spawn `spec`; throws `Deno.errors.NotFound` and friends. */
  constructor(spec: ChildSpec, onChunk: ChunkListener) {
    const leader = setsid();
    const tree = spawnCgroup();
    const [program, ...args] = [
      ...(tree ? ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', tree.into] : []),
      ...(leader ? [leader, ...spec.argv] : spec.argv),
    ];
    if (leader) {
      // setsid would report a missing program as its own exit 1; keep the spawn error instead.
      resolveProgram(spec.argv[0], spec.cwd, spec.env.PATH);
    }
    this.#child = new Deno.Command(program, {
      args,
      cwd: spec.cwd,
      env: spec.env,
      clearEnv: true,
      stdin: spec.stdin ? "piped" : "null",
      stdout: "piped",
      stderr: "piped",
      detached: leader === null,
    }).spawn();
    this.pid = this.#child.pid;
    if (spec.stdin) this.#stdin = this.#child.stdin.getWriter();
    const pump = async (reader: ReadableStreamDefaultReader<Uint8Array>, type: StreamName) => {
      try {
        while (true) {
          const { done, value } = await reader.read();
          if (done) break;
          onChunk(type, value);
        }
      } catch { /* the pipe broke: the process is gone */ }
    };
    this.#readers = [this.#child.stdout.getReader(), this.#child.stderr.getReader()];
    this.drained = Promise.all([
      pump(this.#readers[0], "stdout"),
      pump(this.#readers[1], "stderr"),
    ]).then(() => {});
    this.status = this.#child.status.then((s) => {
      // Whatever the leader left in its group dies with it, so the pipes close.
      killGroup(this.pid);
      return { code: s.code, signal: s.signal ?? null };
    });
  }

  get stdinOpen(): boolean {
    return this.#stdin !== null;
  }

  async write(bytes: Uint8Array): Promise<void> {
    if (!this.#stdin) throw new Error("stdin is closed");
    await this.#stdin.write(bytes);
  }

  async closeStdin(): Promise<void> {
    const w = this.#stdin;
    this.#stdin = null;
    if (w) await w.close().catch(() => {});
  }

  /** Stop reading (Deno closes the pipes); Deno still reaps the leader. */
  release(): void {
    for (const r of this.#readers) r.cancel().catch(() => {});
    this.closeStdin();
  }
}
