/**
 * The body of a spawner worker: a thread of its own that restricts itself once
 * ({@linkcode restrictThisThread}) and then makes every `posix_spawn` call the main thread hands
 * it, so each child starts inside the thread's Landlock domain, with no new privileges, before
 * its first instruction. Requests arrive in a `SharedArrayBuffer` (the layout is in
 * `spawner.ts`) as raw pointers into the main thread's buffers, which the main thread keeps alive
 * while it waits: both threads share one address space.
 *
 * @module
 */

import { type PathRule, restrictThisThread } from "./landlock.ts";
import { mountNoexec } from "./noexec.ts";

const IDLE = 0;
const REQUEST = 1;
const QUIT = 2;
const DONE = 3;
const MOVE = 4;

const lib = Deno.dlopen("libc.so.6", {
  write: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  posix_spawn: {
    parameters: ["pointer", "pointer", "pointer", "pointer", "pointer", "pointer"],
    result: "i32",
  },
});

const ZERO = new TextEncoder().encode("0");

/** The worker's global scope (the server's type-check runs with the window's lib). */
const scope = self as unknown as {
  onmessage: ((event: MessageEvent<Init>) => void) | null;
  postMessage(message: unknown): void;
  close(): void;
};

interface Init {
  shared: SharedArrayBuffer;
  rules: PathRule[];
  closedPorts: number[];
  noexec: string[];
  connectOnly: number[] | null;
}

function serve(shared: SharedArrayBuffer): void {
  const state = new Int32Array(shared);
  const words = new BigUint64Array(shared);
  const at = (i: number) => Deno.UnsafePointer.create(words[i]);
  for (;;) {
    const s = Atomics.load(state, 0);
    if (s === QUIT) break;
    if (s === IDLE || s === DONE) {
      Atomics.wait(state, 0, s);
      continue;
    }
    if (s === MOVE) {
      // A cgroup v1 `tasks` file (int32 2): "0" is this thread. Named so, the kernel moves it
      // without its global threadgroup lock, whose taking after an idle spell waits for an RCU
      // grace period (about 6 ms here); named by its id, it takes it.
      state[1] = Number(lib.symbols.write(state[2], ZERO, 1n)) === 1 ? 0 : -1;
      Atomics.store(state, 0, DONE);
      Atomics.notify(state, 0);
      continue;
    }
    if (s !== REQUEST) continue;
    state[1] = lib.symbols.posix_spawn(at(1), at(2), at(3), at(4), at(5), at(6));
    Atomics.store(state, 0, DONE);
    Atomics.notify(state, 0);
  }
  scope.close();
}

scope.onmessage = (event: MessageEvent<Init>) => {
  const { shared, rules, closedPorts, noexec, connectOnly } = event.data;
  const state = new Int32Array(shared);
  let message: string | null = null;
  let noexecFailure: string | null = null;
  try {
    // Mounts first: Landlock forbids them once in force.
    noexecFailure = mountNoexec(noexec);
    restrictThisThread(rules, closedPorts, connectOnly);
    Atomics.store(state, 14, 1);
  } catch (e) {
    message = (e as Error).message;
    Atomics.store(state, 14, -1);
  }
  Atomics.notify(state, 14);
  scope.postMessage({ error: message, noexecFailure });
  if (message === null) serve(shared);
};
