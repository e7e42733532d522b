/**
 * A process started by {@linkcode spawnLeader}, driven through raw descriptors: stdout and stderr
 * pipes read as they fill, a stdin pipe written as it has room (both on the shared
 * {@linkcode pollLoop}), and its exit noticed from `SIGCHLD` ({@linkcode exitWatch}).
 *
 * Every descriptor is made `O_CLOEXEC` (a concurrent spawn must not inherit another child's
 * pipe: a leaked write end would keep that child's reader from ever seeing end of file), and the
 * server's ends are `O_NONBLOCK`; the child's ends are blocking, as programs expect. Each is
 * closed exactly once: the child's ends right after the spawn, the output pipes at end of file,
 * stdin when closed, all of them on a failed spawn and on {@linkcode NativeChild.release}.
 *
 * The output pipes join the poll loop only {@linkcode OUTPUT_POLL_DELAY_MS} after the spawn.
 * Most commands a caller runs are done by then, and their output is read in one go when they
 * exit: no poll, no thread hop. A program that writes more than a pipe holds (64 KiB) before
 * then waits at most that long once; streamed output reaches its reader at most that late.
 *
 * When the leader has exited it is a zombie: its group is sent `SIGKILL` first, while the zombie
 * still holds the pid (so the id cannot have been reused by an unrelated group), and only then is
 * it reaped with `waitpid(pid, WNOHANG)`. Only this pid is ever waited for, never `-1`: Deno
 * reaps its own children.
 *
 * @module
 */

import {
  closeFd,
  EAGAIN,
  EINTR,
  errno,
  F_SETFL,
  libc,
  LibcError,
  O_CLOEXEC,
  O_NONBLOCK,
  POLLIN,
  POLLOUT,
  WNOHANG,
} from "../libc/index.ts";
import type { ChildSpec, ChildStatus, ChunkListener, SpawnedChild } from "./child.ts";
import { decodeWaitStatus, killGroup } from "./child.ts";
import { exitWatch, hasExited } from "./exit_watch.ts";
import { spawnLeader } from "./posix_spawn.ts";
import type { StreamName } from "./output.ts";
import { pollLoop } from "./poll_loop.ts";

/** Bytes one `read` asks for: as much as a grown pipe holds. */
const READ_BYTES = 256 * 1024;
/** A pipe's default capacity, and what a pipe a process keeps filling is grown to. */
const PIPE_BYTES = 64 * 1024;
const GROWN_PIPE_BYTES = 256 * 1024;
/** `fcntl(2)`: set a pipe's capacity (Linux). */
const F_SETPIPE_SZ = 1031;
/** Bytes read from one pipe per wake-up, so a fast writer cannot hold the JavaScript thread. */
const BYTES_PER_WAKE = 1024 * 1024;
/**
 * Milliseconds from the spawn until the output pipes are polled. Long enough for a short
 * command to have exited (about 0.5 ms for `true`), short enough that nobody sees it.
 */
export const OUTPUT_POLL_DELAY_MS = 2;

/** Shared by every read: reads are synchronous, and each chunk is copied out. */
const scratch = new Uint8Array(READ_BYTES);

/** A pipe: `[read end, write end]`, both `O_CLOEXEC`. */
function pipe(): Int32Array<ArrayBuffer> {
  const fds = new Int32Array(2);
  if (libc().pipe2(fds, O_CLOEXEC) !== 0) throw new LibcError("pipe2");
  return fds;
}

function setNonblocking(fd: number): void {
  if (libc().fcntl(fd, F_SETFL, O_NONBLOCK) !== 0) throw new LibcError("fcntl");
}

interface PendingWrite {
  bytes: Uint8Array;
  done: PromiseWithResolvers<void>;
}

/**
 * A natively spawned group leader.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { NativeChild } from "./native_child.ts";
 * const out: string[] = [];
 * const env = { PATH: "/usr/bin:/bin" };
 * const argv = ["sh", "-c", "echo hi; exit 3"];
 * const child = new NativeChild({ argv, cwd: "/", env, stdin: false },
 *   (_type, bytes) => out.push(new TextDecoder().decode(bytes)));
 * assert.equal((await child.status).code, 3);
 * await child.drained;
 * assert.equal(out.join(""), "hi\n");
 * ```
 */
export class NativeChild implements SpawnedChild {
  readonly pid: number;
  readonly status: Promise<ChildStatus>;
  readonly drained: Promise<void>;
  readonly #onChunk: ChunkListener;
  readonly #status = Promise.withResolvers<ChildStatus>();
  readonly #drained = Promise.withResolvers<void>();
  /** Until the leader is reaped. */
  #running = true;
  /** Set until the output pipes join the poll loop. */
  #pollTimer: ReturnType<typeof setTimeout> | undefined;
  /** Open output descriptors and the stream each is. */
  readonly #outputs = new Map<number, StreamName>();
  /** Output pipes grown for a fast writer. */
  readonly #grown = new Set<number>();
  #stdin = -1;
  #stdinClosing = false;
  #queue: PendingWrite[] = [];
  #stdinClosed: PromiseWithResolvers<void> | null = null;

  /** Spawn `spec`; throws `Deno.errors.NotFound` and friends, having closed what it opened. */
  constructor(spec: ChildSpec, onChunk: ChunkListener) {
    this.#onChunk = onChunk;
    this.status = this.#status.promise;
    this.drained = this.#drained.promise;
    const opened: number[] = [];
    let pid = -1;
    try {
      const out = pipe();
      opened.push(...out);
      const err = pipe();
      opened.push(...err);
      const input = spec.stdin ? pipe() : null;
      if (input) opened.push(...input);
      pid = spawnLeader(
        spec.argv,
        spec.cwd,
        spec.env,
        {
          stdin: input?.[0] ?? null,
          stdout: out[1],
          stderr: err[1],
        },
        spec.located,
        spec.spawner,
      );
      // The child has its copies; ours of its ends must go, or the pipes never reach EOF.
      for (const fd of [out[1], err[1], input?.[0] ?? -1]) {
        closeFd(fd);
        opened.splice(opened.indexOf(fd), 1);
      }
      for (const fd of [out[0], err[0], input?.[1] ?? -1]) if (fd >= 0) setNonblocking(fd);
      this.pid = pid;
      this.#stdin = input?.[1] ?? -1;
      this.#outputs.set(out[0], "stdout");
      this.#outputs.set(err[0], "stderr");
      this.#pollTimer = setTimeout(() => this.#pollOutputs(), OUTPUT_POLL_DELAY_MS);
      exitWatch.watch(pid, () => this.#leaderExited());
    } catch (e) {
      clearTimeout(this.#pollTimer);
      for (const fd of opened) closeFd(fd);
      if (pid > 0) {
        // Started but cannot be watched (out of descriptors): end it here rather than leak it.
        killGroup(pid);
        libc().waitpid(pid, new Int32Array(1), 0);
      }
      throw e;
    }
  }

  /** Hand the output pipes still open to the poll loop. */
  #pollOutputs(): void {
    if (this.#pollTimer === undefined) return;
    clearTimeout(this.#pollTimer);
    this.#pollTimer = undefined;
    for (const fd of this.#outputs.keys()) pollLoop.watch(fd, POLLIN, () => this.#read(fd));
  }

  #read(fd: number): void {
    const type = this.#outputs.get(fd);
    if (type === undefined) return;
    const c = libc();
    for (let taken = 0; taken < BYTES_PER_WAKE;) {
      const n = Number(c.read(fd, scratch, BigInt(READ_BYTES)));
      if (n > 0) {
        // A full pipe means a fast writer: a bigger one costs it and us fewer wake-ups. Only
        // such pipes grow, as every pipe counts against the user's pipe-buffer allowance.
        if (n === PIPE_BYTES && !this.#grown.has(fd)) {
          this.#grown.add(fd);
          c.fcntl(fd, F_SETPIPE_SZ, GROWN_PIPE_BYTES); // refused over the allowance: fine
        }
        this.#deliver(type, scratch.slice(0, n));
        taken += n;
        continue;
      }
      if (n < 0) {
        const e = errno();
        if (e === EINTR) continue;
        if (e === EAGAIN) return;
      }
      // End of file, or an error that will not pass: this stream is over.
      this.#endOutput(fd);
      return;
    }
  }

  #deliver(type: StreamName, bytes: Uint8Array): void {
    try {
      this.#onChunk(type, bytes);
    } catch (e) {
      console.error(`sandbar: process output listener failed: ${(e as Error).message}`);
    }
  }

  #endOutput(fd: number): void {
    if (!this.#outputs.delete(fd)) return;
    pollLoop.unwatch(fd);
    closeFd(fd);
    if (this.#outputs.size > 0) return;
    clearTimeout(this.#pollTimer);
    this.#pollTimer = undefined;
    this.#drained.resolve();
    // Output usually ends because the leader exited; a missed SIGCHLD must not leave it waiting.
    if (this.#running && hasExited(this.pid)) this.#leaderExited();
  }

  #leaderExited(): void {
    if (!this.#running) return;
    this.#running = false;
    exitWatch.unwatch(this.pid);
    killGroup(this.pid);
    const status = new Int32Array(1);
    const r = libc().waitpid(this.pid, status, WNOHANG);
    // -1 (ECHILD) would mean someone else reaped it; nothing left to learn then.
    this.#status.resolve(
      r === this.pid ? decodeWaitStatus(status[0]) : { code: 255, signal: null },
    );
    // Its pipes usually reached end of file with it: read them now. What a grandchild still
    // holds open (it was just sent SIGKILL) is left to the poll loop.
    for (const fd of [...this.#outputs.keys()]) this.#read(fd);
    if (this.#outputs.size > 0) this.#pollOutputs();
  }

  get stdinOpen(): boolean {
    return this.#stdin >= 0 && !this.#stdinClosing;
  }

  write(bytes: Uint8Array): Promise<void> {
    if (!this.stdinOpen) return Promise.reject(new Error("stdin is closed"));
    if (bytes.byteLength === 0) return Promise.resolve();
    if (this.#queue.length === 0) {
      const n = this.#writeSome(bytes);
      if (n < 0) {
        this.#finishStdin("stdin is closed: the process stopped reading");
        return Promise.reject(new Error("stdin is closed"));
      }
      if (n === bytes.byteLength) return Promise.resolve();
      bytes = bytes.subarray(n);
    }
    const done = Promise.withResolvers<void>();
    this.#queue.push({ bytes, done });
    pollLoop.watch(this.#stdin, POLLOUT, () => this.#writable());
    return done.promise;
  }

  /** Write what fits now: the count written, or -1 when the pipe is broken. */
  #writeSome(bytes: Uint8Array): number {
    const c = libc();
    let off = 0;
    while (off < bytes.byteLength) {
      const view = bytes.subarray(off);
      const n = Number(c.write(this.#stdin, view, BigInt(view.byteLength)));
      if (n > 0) {
        off += n;
        continue;
      }
      if (n < 0) {
        const e = errno();
        if (e === EINTR) continue;
        if (e !== EAGAIN) return -1; // EPIPE: nobody reads any more
      }
      break;
    }
    return off;
  }

  #writable(): void {
    while (this.#queue.length > 0) {
      const head = this.#queue[0];
      const n = this.#writeSome(head.bytes);
      if (n < 0) {
        this.#finishStdin("stdin is closed: the process stopped reading");
        return;
      }
      if (n < head.bytes.byteLength) {
        head.bytes = head.bytes.subarray(n);
        return;
      }
      this.#queue.shift();
      head.done.resolve();
    }
    pollLoop.unwatch(this.#stdin);
    if (this.#stdinClosing) this.#finishStdin("stdin is closed");
  }

  /** Close stdin now; writes still waiting fail with `reason`. */
  #finishStdin(reason: string): void {
    const fd = this.#stdin;
    if (fd < 0) return;
    this.#stdin = -1;
    this.#stdinClosing = true;
    pollLoop.unwatch(fd);
    closeFd(fd);
    for (const w of this.#queue) w.done.reject(new Error(reason));
    this.#queue = [];
    this.#stdinClosed?.resolve();
  }

  closeStdin(discard = false): Promise<void> {
    if (this.#stdin < 0) return Promise.resolve();
    this.#stdinClosing = true;
    if (discard || this.#queue.length === 0) {
      this.#finishStdin("stdin is closed");
      return Promise.resolve();
    }
    this.#stdinClosed ??= Promise.withResolvers<void>();
    return this.#stdinClosed.promise;
  }

  release(): void {
    for (const fd of [...this.#outputs.keys()]) this.#endOutput(fd);
    this.#finishStdin("the server is stopping");
    if (!this.#running) return;
    this.#running = false;
    exitWatch.unwatch(this.pid);
    // Reap it if it is a zombie by now; a leader still alive (it was sent SIGKILL) is left to
    // init, which adopts it when the server exits.
    killGroup(this.pid);
    const status = new Int32Array(1);
    const reaped = libc().waitpid(this.pid, status, WNOHANG) === this.pid;
    this.#status.resolve(reaped ? decodeWaitStatus(status[0]) : { code: 137, signal: "SIGKILL" });
  }
}
