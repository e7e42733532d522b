/**
 * A pseudo-terminal with its I/O loop: output is read as it comes and handed to a callback,
 * input is written (queued while the terminal has no room), and everything is released by
 * `close()`.
 *
 * One loop per terminal: a nonblocking `poll` on the master and a wake-up pipe, then
 * synchronous, nonblocking `read`s until `EAGAIN`, batched into one chunk of up to 64 KiB so a
 * burst of output becomes a few WebSocket frames rather than thousands. The wake-up pipe lets
 * the server end a pending `poll` at once (a pending FFI call keeps Deno's event loop alive,
 * and closing a descriptor under a running `poll` is a race), and lets a change of interest
 * (pause, input queued) take effect without waiting for output.
 *
 * @module
 */

import {
  closeFd,
  EAGAIN,
  EINTR,
  errno,
  libc,
  LibcError,
  O_CLOEXEC,
  O_NONBLOCK,
  POLLERR,
  POLLHUP,
  POLLIN,
  POLLOUT,
} from "../libc/index.ts";
import { openPtyPair, type PtyPair, setWindowSize, type WindowSize } from "./pair.ts";

/** Largest chunk handed to the output callback at once. */
const CHUNK_BYTES = 64 * 1024;
/** Largest amount of input queued while the terminal has no room; more is refused. */
export const MAX_PENDING_INPUT = 1024 * 1024;

/**
 * An open pseudo-terminal and its I/O loop.
 */
export class PseudoTerminal {
  /** The slave's device path, for the shell to open. */
  readonly path: string;
  readonly #pair: PtyPair;
  readonly #wake: Int32Array<ArrayBuffer>;
  readonly #onOutput: (chunk: Uint8Array) => void;
  readonly #pollFds = new Uint8Array(16);
  readonly #chunk = new Uint8Array(CHUNK_BYTES);
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #paused = false;
  #stopping = false;
  #closed: Promise<void> | undefined;
  readonly #loop: Promise<void>;

  private constructor(
    pair: PtyPair,
    wake: Int32Array<ArrayBuffer>,
    onOutput: (c: Uint8Array) => void,
  ) {
    this.#pair = pair;
    this.path = pair.path;
    this.#wake = wake;
    this.#onOutput = onOutput;
    this.#loop = this.#run();
  }

  /** Open a pair of the given size and start reading it; output goes to `onOutput`. */
  static open(size: WindowSize, onOutput: (chunk: Uint8Array) => void): PseudoTerminal {
    const pair = openPtyPair(size);
    const wake = new Int32Array(2);
    if (libc().pipe2(wake, O_CLOEXEC | O_NONBLOCK) !== 0) {
      const err = new LibcError("pipe2");
      closeFd(pair.slave);
      closeFd(pair.master);
      throw err;
    }
    return new PseudoTerminal(pair, wake, onOutput);
  }

  /** Bytes of input waiting for room in the terminal. */
  get pendingInput(): number {
    return this.#pendingBytes;
  }

  /**
   * Write input. Returns false (and writes nothing) when the terminal is closed or when more
   * than {@linkcode MAX_PENDING_INPUT} bytes would be waiting.
   */
  write(data: Uint8Array): boolean {
    if (this.#stopping) return false;
    if (data.length === 0) return true;
    if (this.#pendingBytes + data.length > MAX_PENDING_INPUT) return false;
    if (this.#pendingBytes === 0) {
      const n = this.#writeSome(data);
      if (n === data.length) return true;
      data = data.subarray(n);
    }
    this.#pending.push(data.slice());
    this.#pendingBytes += data.length;
    this.#wakeUp(); // the loop must now also wait for room (POLLOUT)
    return true;
  }

  /** Set the window size. */
  resize(size: WindowSize): void {
    if (this.#stopping) return;
    setWindowSize(this.#pair.master, size);
  }

  /** Stop reading output until {@linkcode resume}; the writer then blocks in the terminal. */
  pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    this.#wakeUp();
  }

  /** Read output again. */
  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.#wakeUp();
  }

  /** Whether output reading is paused. */
  get paused(): boolean {
    return this.#paused;
  }

  /**
   * Stop the loop, hand over the output still buffered in the terminal, and close every
   * descriptor. Idempotent.
   */
  close(): Promise<void> {
    return this.#closed ??= (async () => {
      this.#stopping = true;
      this.#wakeUp();
      await this.#loop;
      this.#drain();
      this.#pending = [];
      this.#pendingBytes = 0;
      closeFd(this.#pair.master);
      closeFd(this.#pair.slave);
      closeFd(this.#wake[0]);
      closeFd(this.#wake[1]);
    })();
  }

  #wakeUp(): void {
    // A full pipe already means "wake up"; the result does not matter.
    libc().write(this.#wake[1], new Uint8Array(1), 1n);
  }

  /** Write as much as fits now; the count written. */
  #writeSome(data: Uint8Array): number {
    let off = 0;
    while (off < data.length) {
      const view = data.subarray(off);
      const n = Number(libc().write(this.#pair.master, view, BigInt(view.length)));
      if (n > 0) {
        off += n;
        continue;
      }
      if (n < 0 && errno() === EINTR) continue;
      break; // EAGAIN: no room now; anything else: the loop sees the error on the next poll
    }
    return off;
  }

  #flushPending(): void {
    while (this.#pending.length > 0) {
      const head = this.#pending[0];
      const n = this.#writeSome(head);
      this.#pendingBytes -= n;
      if (n < head.length) {
        this.#pending[0] = head.subarray(n);
        return;
      }
      this.#pending.shift();
    }
  }

  /** Read until the terminal has nothing more; false when it reported an error. */
  #drain(): boolean {
    const c = libc();
    let filled = 0;
    let ok = true;
    while (true) {
      const room = this.#chunk.subarray(filled);
      const n = Number(c.read(this.#pair.master, room, BigInt(room.length)));
      if (n > 0) {
        filled += n;
        if (filled === this.#chunk.length) {
          this.#onOutput(this.#chunk.slice());
          filled = 0;
        }
        continue;
      }
      if (n < 0) {
        const e = errno();
        if (e === EINTR) continue;
        ok = e === EAGAIN;
      }
      break;
    }
    if (filled > 0) this.#onOutput(this.#chunk.slice(0, filled));
    return ok;
  }

  #clearWake(): void {
    const sink = new Uint8Array(64);
    while (Number(libc().read(this.#wake[0], sink, BigInt(sink.length))) > 0) { /* empty it */ }
  }

  async #run(): Promise<void> {
    const view = new DataView(this.#pollFds.buffer);
    const c = libc();
    let failures = 0;
    while (!this.#stopping) {
      const events = (this.#paused ? 0 : POLLIN) | (this.#pendingBytes > 0 ? POLLOUT : 0);
      // struct pollfd { int fd; short events; short revents; }, two of them.
      view.setInt32(0, this.#pair.master, true);
      view.setInt16(4, events, true);
      view.setInt16(6, 0, true);
      view.setInt32(8, this.#wake[0], true);
      view.setInt16(12, POLLIN, true);
      view.setInt16(14, 0, true);
      const n = await c.poll(this.#pollFds, 2n, -1);
      if (n < 0) {
        // EINTR, presumably (errno of the worker thread is not readable here); anything that
        // keeps failing would spin, so give up reading after a few in a row.
        if (++failures > 100) break;
        continue;
      }
      failures = 0;
      if (view.getInt16(14, true) !== 0) this.#clearWake();
      if (this.#stopping) break;
      const revents = view.getInt16(6, true);
      if (revents & POLLOUT) this.#flushPending();
      if (revents & POLLIN) {
        if (!this.#drain()) break;
      } else if (revents & (POLLHUP | POLLERR)) {
        // Cannot happen while the server holds the slave side; stop rather than spin.
        break;
      }
    }
  }
}
