/**
 * One `poll(2)` loop for the descriptors of every natively spawned process: their stdout and
 * stderr pipes, and their stdin pipes while a write waits for room. (Exits come from `SIGCHLD`,
 * `exit_watch.ts`.)
 *
 * One loop for all rather than one per process: each pending `nonblocking` FFI call holds one of
 * Deno's blocking worker threads (a bounded pool the file system and the terminals use too), so
 * 256 background processes must not mean 256 parked threads. The loop owns a wake-up pipe so a
 * new descriptor, a changed interest or a removed descriptor takes effect at once, and it runs
 * only while something is watched: with nothing left it closes the wake-up pipe and ends, so no
 * pending FFI call keeps the event loop alive once every process is gone.
 *
 * Listeners run synchronously on the JavaScript thread with the `revents` of their descriptor;
 * they read and write with nonblocking calls and must not throw (a throw is caught and the
 * descriptor is dropped from the loop, so one bad listener cannot spin the loop).
 *
 * @module
 */

import { closeFd, libc, LibcError, O_CLOEXEC, O_NONBLOCK, POLLIN } from "../libc/index.ts";

/** Called with the `revents` of a ready descriptor. */
export type ReadyListener = (revents: number) => void;

interface Watch {
  fd: number;
  events: number;
  onReady: ReadyListener;
}

/** Wait before polling again after `poll` itself failed (EINTR, ENOMEM), so it cannot spin. */
const RETRY_MS = 10;

/**
 * The loop.
 */
export class PollLoop {
  readonly #watches = new Map<number, Watch>();
  #wake: Int32Array<ArrayBuffer> | null = null;
  #running = false;
  #polling = false;
  #woken = false;

  /** Number of descriptors watched. */
  get size(): number {
    return this.#watches.size;
  }

  /** Whether the loop is running (a `poll` is pending or about to be). */
  get running(): boolean {
    return this.#running;
  }

  /**
   * Watch `fd` for `events` (0 to keep it registered but not polled). Replaces an earlier watch
   * of the same descriptor. Throws a {@linkcode LibcError} when the loop has to start and cannot
   * make its wake-up pipe (out of descriptors).
   */
  watch(fd: number, events: number, onReady: ReadyListener): void {
    if (!this.#running) this.#start();
    this.#watches.set(fd, { fd, events, onReady });
    this.#changed();
  }

  /** Change what `fd` is polled for. */
  setEvents(fd: number, events: number): void {
    const w = this.#watches.get(fd);
    if (!w || w.events === events) return;
    w.events = events;
    this.#changed();
  }

  /**
   * Stop watching `fd`. The caller may close it right after: a pending `poll` still holding it
   * is woken up, and its answer for the old descriptor is ignored.
   */
  unwatch(fd: number): void {
    if (this.#watches.delete(fd)) this.#changed();
  }

  #start(): void {
    const wake = new Int32Array(2);
    if (libc().pipe2(wake, O_CLOEXEC | O_NONBLOCK) !== 0) throw new LibcError("pipe2");
    this.#wake = wake;
    this.#running = true;
    this.#woken = false;
    // Started from a microtask so every descriptor registered in this same turn is in the first
    // poll.
    queueMicrotask(() => this.#run());
  }

  #changed(): void {
    if (!this.#polling || this.#woken) return;
    this.#woken = true;
    // A full pipe already means "wake up"; the result does not matter.
    libc().write(this.#wake![1], new Uint8Array(1), 1n);
  }

  async #run(): Promise<void> {
    const c = libc();
    const wake = this.#wake!;
    const sink = new Uint8Array(64);
    try {
      while (this.#watches.size > 0) {
        const armed = [...this.#watches.values()].filter((w) => w.events !== 0);
        // struct pollfd { int fd; short events; short revents; }; the wake-up pipe first. A new
        // buffer each time: the worker thread may still be writing the last one's revents.
        const buffer = new Uint8Array(8 * (armed.length + 1));
        const view = new DataView(buffer.buffer);
        view.setInt32(0, wake[0], true);
        view.setInt16(4, POLLIN, true);
        armed.forEach((w, i) => {
          view.setInt32(8 * (i + 1), w.fd, true);
          view.setInt16(8 * (i + 1) + 4, w.events, true);
        });
        this.#polling = true;
        const n = await c.poll(buffer, BigInt(armed.length + 1), -1);
        this.#polling = false;
        if (n < 0) {
          // errno of the worker thread is not readable here: EINTR or ENOMEM, both passing.
          await new Promise((r) => setTimeout(r, RETRY_MS));
          continue;
        }
        if (view.getInt16(6, true) !== 0) {
          while (Number(c.read(wake[0], sink, BigInt(sink.length))) > 0) { /* empty it */ }
        }
        this.#woken = false;
        armed.forEach((w, i) => {
          const revents = view.getInt16(8 * (i + 1) + 6, true);
          // A watch replaced or removed while the poll was pending is not this descriptor's.
          if (revents === 0 || this.#watches.get(w.fd) !== w) return;
          try {
            w.onReady(revents);
          } catch (e) {
            this.#watches.delete(w.fd);
            console.error(`sandbar: process poll listener failed: ${(e as Error).message}`);
          }
        });
      }
    } finally {
      this.#running = false;
      this.#wake = null;
      closeFd(wake[0]);
      closeFd(wake[1]);
    }
  }
}

/** The server's one loop for native processes. */
export const pollLoop: PollLoop = new PollLoop();
