/**
 * A confined spawner: one Deno worker (an OS thread) per confinement, which restricts its own
 * thread with Landlock once and then makes `posix_spawn` calls for the main thread. Landlock
 * domains and `no_new_privs` belong to a thread and pass to every process it starts, so each
 * child is confined from its first instruction without running any code between `fork` and
 * `exec` (which Deno cannot). The main thread stays unconfined: the server's own file work is
 * bounded by Deno's permissions instead.
 *
 * Calls are synchronous, as `posix_spawn` is on the main thread: the request (six pointers into
 * buffers the caller keeps alive) goes through a `SharedArrayBuffer`, and the main thread waits
 * on it with `Atomics.wait` while the worker spawns. Layout of the shared words (little endian):
 * int32 0 the state (idle, request, quit, done, move), int32 1 the result, uint64 1-6 the pointers
 * (a move's descriptor in int32 2), int32 14 whether the restriction succeeded (1) or failed (-1).
 *
 * @module
 */

import { bornInWork, spawnCgroup, spawnIntoWork } from "../process/trees.ts";
import { closeCgroupFiles, openCgroupFile } from "../process/cgroup_files.ts";
import { threadWorkFds } from "../process/work_cgroup.ts";
import type { PathRule } from "./landlock.ts";

const IDLE = 0;
const REQUEST = 1;
const QUIT = 2;
// 3 (done) is set by the worker once the call returned: anything but the request ends the wait.
/** Move the worker's thread into a cgroup: the `tasks` file open at int32 2. */
const MOVE = 4;
const READY_SLOT = 14;
/** `posix_spawn`'s answer when the kernel refused the fork (a process limit reached). */
const EAGAIN = 11;
/** How long a spawn may wait for a worker still starting. */
const START_TIMEOUT_MS = 30_000;

/** What a spawner's `posix_spawn` takes: the caller's buffers (or null). */
export type SpawnBuffer = Uint8Array | Int32Array | BigUint64Array | null;

function address(buffer: SpawnBuffer): bigint {
  if (buffer === null) return 0n;
  return BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(buffer as Uint8Array)));
}

/** Every distinct reason a spawner could not mount the writable trees `noexec` (this process). */
const noexecFailures = new Set<string>();

/**
 * What the capabilities document says when a spawner of an `allow_commands` identity could not
 * mount its writable trees `noexec` (known once that identity started a process): the loader can
 * then map a library from them, and only the string guard and the environment scrub hold.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { noexecWarnings } from "./spawner.ts";
 * assert.deepEqual(noexecWarnings(), []); // no spawner has failed in this process
 * ```
 */
export function noexecWarnings(): string[] {
  return [...noexecFailures].map((why) =>
    `Writable paths stay executable for processes under allow_commands (${why}): the dynamic ` +
    "loader may map a library from them; the command string guard and the environment scrub " +
    "still hold"
  );
}

/**
 * One confined spawner thread.
 *
 * @example
 * ```ts ignore
 * const spawner = new Spawner(rules);
 * await spawner.ready;
 * const rc = spawner.posixSpawn(pid, path, actions, attr, argv, envp);
 * spawner.close();
 * ```
 */
export class Spawner {
  /** Resolves once the thread is restricted; rejects with why it could not be. */
  readonly ready: Promise<void>;
  readonly #shared = new SharedArrayBuffer(64);
  readonly #state = new Int32Array(this.#shared);
  readonly #words = new BigUint64Array(this.#shared);
  readonly #worker: Worker;
  #failure: string | null = null;
  #closed = false;

  /** Why the writable trees are not `noexec` for this thread's children, or null. */
  noexecFailure: string | null = null;

  /**
   * Whether this thread's children are the server's own helpers (the `system` kind), kept beside
   * the server rather than in a local sandbox's `work` cgroup with the programs it runs.
   */
  besideServer = false;

  /**
   * Start the worker and have it restrict itself to `rules`, with TCP `connect` to
   * `closedPorts` refused, after mounting the trees of `noexec` noexec in a mount namespace of
   * its own (see `noexec.ts`); with `connectOnly`, `connect` to any other port refused too.
   */
  constructor(
    rules: readonly PathRule[],
    closedPorts: readonly number[] = [],
    noexec: readonly string[] = [],
    connectOnly: readonly number[] | null = null,
  ) {
    this.#worker = new Worker(new URL("./spawner_worker.ts", import.meta.url), {
      type: "module",
      name: "sandbar-spawner",
    });
    const ready = Promise.withResolvers<void>();
    this.ready = ready.promise;
    this.ready.catch(() => {});
    this.#worker.onmessage = (
      e: MessageEvent<{ error: string | null; noexecFailure: string | null }>,
    ) => {
      this.noexecFailure = e.data.noexecFailure ?? null;
      if (this.noexecFailure) {
        console.error(
          `sandbar: writable paths stay executable for children: ${this.noexecFailure}`,
        );
        noexecFailures.add(this.noexecFailure);
      }
      if (e.data.error === null) ready.resolve();
      else {
        this.#failure = e.data.error;
        ready.reject(new Error(`confinement failed: ${e.data.error}`));
      }
    };
    this.#worker.onerror = (e) => {
      e.preventDefault();
      this.#failure = e.message;
      Atomics.store(this.#state, READY_SLOT, -1);
      ready.reject(new Error(`confinement failed: ${e.message}`));
    };
    this.#worker.postMessage({ shared: this.#shared, rules, closedPorts, noexec, connectOnly });
  }

  /**
   * `posix_spawn(pid, path, actions, attr, argv, envp)` on the confined thread: its return
   * value. Blocks while the worker is still starting (once). Throws when the thread could not
   * be restricted: a process is never started less confined than asked.
   */
  posixSpawn(
    pid: Int32Array,
    path: Uint8Array,
    actions: SpawnBuffer,
    attr: SpawnBuffer,
    argv: BigUint64Array,
    envp: BigUint64Array,
  ): number {
    if (this.#closed) throw new Error("the spawner is closed");
    if (Atomics.load(this.#state, READY_SLOT) === 0) {
      Atomics.wait(this.#state, READY_SLOT, 0, START_TIMEOUT_MS);
    }
    if (Atomics.load(this.#state, READY_SLOT) !== 1) {
      throw new Error(`confinement failed: ${this.#failure ?? "the spawner did not start"}`);
    }
    // A child of a process tree with a cgroup is born in it, and one of a tree's in a local
    // sandbox in `work` too (where threads can be moved: cgroup v1): the thread that forks it
    // moves itself in for the call (see `server/process/trees.ts`, `work_cgroup.ts`). When `work`
    // has no process slot left (a fork bomb in it), the spawn is made again beside the server,
    // and the tree moves the child in after.
    const tree = spawnCgroup();
    const into = tree ? openCgroupFile(tree.into) : -1;
    const back = tree ? openCgroupFile(tree.back) : -1;
    try {
      if (tree !== null && (into < 0 || back < 0 || !this.#moveThread([into]))) {
        throw new Error(`could not move the spawner thread into the process tree ${tree.into}`);
      }
      const fds = threadWorkFds();
      const toWork = !this.besideServer && spawnIntoWork() && fds.into.length > 0;
      // Back from every hierarchy after, even when a move in was refused in one of them.
      const work = toWork && this.#moveThread(fds.into);
      try {
        const rc = this.#call(pid, path, actions, attr, argv, envp);
        if (work && rc === 0) bornInWork();
        if (!work || rc !== EAGAIN) return rc;
        this.#moveThread(fds.back);
        return this.#call(pid, path, actions, attr, argv, envp);
      } finally {
        if (toWork) this.#moveThread(fds.back);
        if (tree !== null) this.#moveThread([back]);
      }
    } finally {
      closeCgroupFiles(into, back);
    }
  }

  /**
   * Move the worker's thread into the cgroup of each `tasks` file open at `fds`, in order (the
   * worker writes "0", itself: see `spawner_worker.ts`); whether every move was taken.
   */
  #moveThread(fds: readonly number[]): boolean {
    let ok = true;
    for (const fd of fds) {
      this.#state[2] = fd;
      if (this.#request(MOVE) !== 0) ok = false;
    }
    return ok;
  }

  #call(
    pid: Int32Array,
    path: Uint8Array,
    actions: SpawnBuffer,
    attr: SpawnBuffer,
    argv: BigUint64Array,
    envp: BigUint64Array,
  ): number {
    const w = this.#words;
    w[1] = address(pid);
    w[2] = address(path);
    w[3] = address(actions);
    w[4] = address(attr);
    w[5] = address(argv);
    w[6] = address(envp);
    return this.#request(REQUEST);
  }

  /** Hand the worker request `kind` and wait for its answer (int32 1). */
  #request(kind: typeof REQUEST | typeof MOVE): number {
    Atomics.store(this.#state, 0, kind);
    Atomics.notify(this.#state, 0);
    // posix_spawn returns once the child has called exec: a thread that does not answer in this
    // long is gone, and the spawner is not used again (the event loop, which would report the
    // worker's death, is the thread waiting here).
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (Atomics.load(this.#state, 0) === kind) {
      if (Date.now() > deadline) {
        this.#failure = "the spawner thread did not answer";
        Atomics.store(this.#state, READY_SLOT, -1);
        throw new Error(`confinement failed: ${this.#failure}`);
      }
      Atomics.wait(this.#state, 0, kind, 1000);
    }
    const result = this.#state[1];
    Atomics.store(this.#state, 0, IDLE);
    return result;
  }

  /** End the worker. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    Atomics.store(this.#state, 0, QUIT);
    Atomics.notify(this.#state, 0);
    this.#worker.terminate();
  }
}
