/**
 * Noticing that a natively spawned process has exited, on the JavaScript thread, from
 * `SIGCHLD`.
 *
 * Why not a pidfd on the poll loop: every `poll` there is a `nonblocking` FFI call, a hop to a
 * worker thread and back. For a short command (`true`, `ls`) that hop, and the loop's wake-up
 * writes as descriptors come and go, cost about a tenth of the whole run. A `SIGCHLD` listener
 * wakes Deno's own event loop directly, with no thread in between.
 *
 * Signals coalesce (two exits may raise one `SIGCHLD`) and any child's exit raises one, including
 * children `Deno.Command` started, so each signal asks every watched pid, with
 * `waitid(WNOWAIT)`: that looks without reaping. The caller reaps its own child; only watched
 * pids are ever asked, never `-1`, so Deno still reaps its own children.
 *
 * The listener is added when the first pid is watched and removed with the last, so nothing
 * keeps the event loop alive once no native process runs.
 *
 * @module
 */

import { ECHILD, errno, libc } from "../libc/index.ts";

/** `waitid(2)`: wait for one pid; for exited children; do not reap; do not block. */
const P_PID = 1;
const WEXITED = 4;
const WNOHANG = 1;
const WNOWAIT = 0x01000000;
/** `siginfo_t` is 128 bytes; `si_pid` is at offset 16 on 64-bit Linux. */
const SIGINFO_BYTES = 128;
const SI_PID_OFFSET = 16;

const siginfo = new Uint8Array(SIGINFO_BYTES);
const siginfoView = new DataView(siginfo.buffer);

/**
 * Whether `pid`, a child of this process, has exited (and is a zombie until it is reaped).
 */
export function hasExited(pid: number): boolean {
  siginfoView.setInt32(SI_PID_OFFSET, 0, true);
  const r = libc().waitid!(P_PID, pid, siginfo, WEXITED | WNOHANG | WNOWAIT);
  // ECHILD (not our child, or already reaped) is an exit too: there is nothing to wait for.
  // Any other failure (EINTR) says nothing; the next SIGCHLD asks again.
  if (r !== 0) return errno() === ECHILD;
  return siginfoView.getInt32(SI_PID_OFFSET, true) === pid;
}

/**
 * The pids being watched and what to call when each exits.
 */
export class ExitWatch {
  readonly #watched = new Map<number, () => void>();
  #listening = false;
  readonly #onSignal = () => this.#check();

  /** Number of pids watched. */
  get size(): number {
    return this.#watched.size;
  }

  /**
   * Call `onExit` once, on the JavaScript thread, after `pid` has exited; the pid stays a
   * zombie (its id taken) until the caller reaps it. A pid that has exited already is reported
   * from a microtask.
   */
  watch(pid: number, onExit: () => void): void {
    this.#watched.set(pid, onExit);
    if (!this.#listening) {
      Deno.addSignalListener("SIGCHLD", this.#onSignal);
      this.#listening = true;
    }
    // A SIGCHLD raised before the listener was added is not delivered to it.
    queueMicrotask(() => {
      if (this.#watched.get(pid) === onExit && hasExited(pid)) this.#report(pid, onExit);
    });
  }

  /** Stop watching `pid`. */
  unwatch(pid: number): void {
    if (!this.#watched.delete(pid)) return;
    if (this.#watched.size === 0 && this.#listening) {
      Deno.removeSignalListener("SIGCHLD", this.#onSignal);
      this.#listening = false;
    }
  }

  #check(): void {
    for (const [pid, onExit] of [...this.#watched]) {
      if (hasExited(pid)) this.#report(pid, onExit);
    }
  }

  #report(pid: number, onExit: () => void): void {
    this.unwatch(pid);
    try {
      onExit();
    } catch (e) {
      console.error(`sandbar: process exit listener failed: ${(e as Error).message}`);
    }
  }
}

/** The server's one watch over native processes. */
export const exitWatch: ExitWatch = new ExitWatch();
