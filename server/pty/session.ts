/**
 * One terminal session: a pseudo-terminal, the shell leading a session on it, the scrollback,
 * the clients watching it, and its end.
 *
 * However it ends (the shell exits, `DELETE`, the idle timeout, the server stopping), the end
 * runs the same steps once: hang up the shell's whole session (`SIGHUP`, then `SIGKILL` after a
 * grace), wait for the shell to be reaped, read the last output and close the descriptors, and
 * only then tell the clients, so the `exit` message always comes after the last output.
 *
 * Clients are transport-neutral ({@linkcode TerminalClient}); the WebSocket protocol lives in
 * `server/handlers/terminal/`.
 *
 * @module
 */

import { Scrollback } from "./scrollback.ts";
import { hangUpSession } from "./session_kill.ts";
import { spawnOnTerminal, type TerminalChild } from "./terminal_program.ts";
import { ProcessTree } from "../process/trees.ts";
import type { Spawner } from "../confine/spawner.ts";
import { PseudoTerminal } from "./terminal.ts";
import type { WindowSize } from "./pair.ts";

/** Why a terminal ended. */
export type EndReason = "exit" | "deleted" | "idle_timeout" | "shutdown";

/** How a terminal ended. */
export interface TerminalExit {
  /** Exit code, or null when a signal ended the shell. */
  exitCode: number | null;
  /** The signal that ended the shell, or null. */
  signal: string | null;
  /** Why. */
  reason: EndReason;
}

/** A watcher of a terminal: a WebSocket connection, in practice. */
export interface TerminalClient {
  /** Terminal output. */
  output(bytes: Uint8Array): void;
  /** The size changed. */
  resized(size: WindowSize): void;
  /** The terminal ended; the client should be closed after this. */
  ended(exit: TerminalExit): void;
  /** Bytes queued for this client and not yet sent (for backpressure). */
  readonly queued: number;
  /** Drop the client (it is too slow); `ended` is not called afterwards. */
  drop(code: number, reason: string): void;
}

/** What a terminal is started with (all checked by the guards before). */
export interface TerminalOptions {
  /** The id. */
  id: string;
  /** The identity that created it; only it can see and use the terminal. */
  owner: string;
  /** The program. */
  shell: string;
  /** Its arguments. */
  args: readonly string[];
  /** Absolute working directory. */
  cwd: string;
  /** The whole environment of the shell. */
  env: Record<string, string>;
  /** Initial size. */
  size: WindowSize;
  /** Milliseconds with no client and no activity before the terminal is closed. */
  idleTimeoutMs: number;
  /** Bytes of scrollback kept. */
  scrollbackBytes: number;
  /** The confined thread its shell starts on (none: unconfined). */
  spawner?: Spawner;
}

/** Backpressure: pause reading while a client has more than this queued ... */
export const HIGH_WATER = 4 * 1024 * 1024;
/** ... and read again once every client is under this. */
const LOW_WATER = 1024 * 1024;
/** A client over the high-water mark this long is dropped so the others continue. */
export const SLOW_CONSUMER_MS = 30_000;
/** Grace between `SIGHUP` and `SIGKILL` when a terminal is ended. */
const HANGUP_GRACE_MS = 2_000;

/**
 * A running (or ended) terminal.
 */
export class Terminal {
  /** Options it was started with. */
  readonly options: TerminalOptions;
  /** When it was created. */
  readonly createdAt: Date = new Date();
  /** The shell's process id (and session id). */
  readonly pid: number;
  /** Called once the terminal has fully ended (descriptors closed). */
  onEnded: (t: Terminal) => void = () => {};
  /** When it ended. */
  endedAt: Date | null = null;
  /** How it ended, once it has. */
  exit: TerminalExit | null = null;
  #size: WindowSize;
  readonly #term: PseudoTerminal;
  readonly #child: TerminalChild;
  /** Everything the shell starts, `setsid` or not: ended with the terminal. */
  readonly #tree = new ProcessTree();
  readonly #scrollback: Scrollback;
  readonly #clients = new Map<TerminalClient, { overSince: number | null }>();
  #reason: EndReason | undefined;
  #ending: Promise<void> | undefined;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;
  #pressureTimer: ReturnType<typeof setTimeout> | undefined;

  private constructor(options: TerminalOptions) {
    this.options = options;
    this.#size = options.size;
    this.#scrollback = new Scrollback(options.scrollbackBytes);
    this.#term = PseudoTerminal.open(options.size, (bytes) => this.#output(bytes));
    try {
      this.#child = this.#tree.spawn(() =>
        spawnOnTerminal({
          tty: this.#term.path,
          program: options.shell,
          args: options.args,
          cwd: options.cwd,
          env: options.env,
          spawner: options.spawner,
        })
      );
    } catch (e) {
      this.#tree.end();
      this.#term.close();
      throw e;
    }
    this.pid = this.#child.pid;
    this.#child.status.then(() => this.end("exit"));
    this.#armIdle();
  }

  /** Open a pseudo-terminal and start the shell on it. */
  static start(options: TerminalOptions): Terminal {
    return new Terminal(options);
  }

  /** Current size. */
  get size(): WindowSize {
    return this.#size;
  }

  /** Whether the shell is still running (and the end has not begun). */
  get running(): boolean {
    return this.#reason === undefined;
  }

  /** Number of clients connected. */
  get clientCount(): number {
    return this.#clients.size;
  }

  /** Write input; false when it was refused (ended, or too much input waiting). */
  write(bytes: Uint8Array): boolean {
    if (!this.running) return false;
    return this.#term.write(bytes);
  }

  /** Resize; every client is told. */
  resize(size: WindowSize): void {
    if (!this.running) return;
    this.#term.resize(size);
    this.#size = size;
    for (const client of this.#clients.keys()) client.resized(size);
    this.#armIdle();
  }

  /**
   * Add a client: it gets the scrollback (returned, for the caller to send first) and then live
   * output. On an ended terminal it gets the scrollback and, right after, `ended`.
   */
  attach(client: TerminalClient): Uint8Array {
    const replay = this.#scrollback.snapshot();
    if (this.exit) {
      const exit = this.exit;
      queueMicrotask(() => client.ended(exit));
      return replay;
    }
    this.#clients.set(client, { overSince: null });
    clearTimeout(this.#idleTimer);
    return replay;
  }

  /** Remove a client (it disconnected). */
  detach(client: TerminalClient): void {
    if (!this.#clients.delete(client)) return;
    this.#armIdle();
    this.#relieve();
  }

  /**
   * End the terminal (idempotent; the first reason wins) and resolve once the processes are
   * gone and the descriptors closed.
   */
  end(reason: EndReason, graceMs = HANGUP_GRACE_MS): Promise<void> {
    this.#reason ??= reason;
    return this.#ending ??= this.#finish(graceMs);
  }

  async #finish(graceMs: number): Promise<void> {
    clearTimeout(this.#idleTimer);
    clearTimeout(this.#pressureTimer);
    // The shell itself first, through its handle (safe from pid reuse): the scan below finds
    // members by session, and a terminal deleted right after it was created may still be in
    // `setsid`, before the session exists.
    try {
      this.#child.kill("SIGHUP");
    } catch { /* exited */ }
    try {
      await hangUpSession(this.pid, graceMs);
    } catch (e) {
      console.error(`sandbar: hanging up terminal ${this.options.id}: ${(e as Error).message}`);
      try {
        this.#child.kill("SIGKILL");
      } catch { /* gone */ }
    }
    // What left the session (`setsid`) but not the tree ends now (the shell may be reaped).
    this.#tree.end(true);
    // Our own child, not yet reaped, so its pid cannot have been reused: if the hang-up missed it
    // (it ignores SIGHUP and left the session), it is killed outright.
    const timer = setTimeout(() => {
      try {
        this.#child.kill("SIGKILL");
      } catch { /* exited */ }
    }, graceMs);
    const status = await this.#child.status;
    clearTimeout(timer);
    this.#term.resume();
    await this.#term.close();
    this.exit = {
      exitCode: status.signal ? null : status.code,
      signal: status.signal ?? null,
      reason: this.#reason!,
    };
    this.endedAt = new Date();
    const clients = [...this.#clients.keys()];
    this.#clients.clear();
    for (const client of clients) client.ended(this.exit);
    this.onEnded(this);
  }

  #armIdle(): void {
    clearTimeout(this.#idleTimer);
    if (!this.running || this.#clients.size > 0) return;
    this.#idleTimer = setTimeout(() => this.end("idle_timeout"), this.options.idleTimeoutMs);
  }

  #output(bytes: Uint8Array): void {
    this.#scrollback.push(bytes);
    if (this.#clients.size === 0) return;
    let over = false;
    for (const [client, mark] of this.#clients) {
      client.output(bytes);
      if (client.queued > HIGH_WATER) {
        mark.overSince ??= Date.now();
        over = true;
      }
    }
    if (over && !this.#term.paused) {
      this.#term.pause();
      this.#watchPressure();
    }
  }

  /** While paused, look at the clients' queues until they drain (there is no drain event). */
  #watchPressure(): void {
    clearTimeout(this.#pressureTimer);
    this.#pressureTimer = setTimeout(() => {
      const now = Date.now();
      for (const [client, mark] of this.#clients) {
        if (client.queued <= LOW_WATER) {
          mark.overSince = null;
        } else if (mark.overSince !== null && now - mark.overSince > SLOW_CONSUMER_MS) {
          this.#clients.delete(client);
          client.drop(4008, "slow_consumer");
        }
      }
      if (!this.#relieve()) this.#watchPressure();
    }, 5);
  }

  /** Resume reading when no client is over the low-water mark; true when resumed. */
  #relieve(): boolean {
    if (!this.#term.paused) return true;
    for (const client of this.#clients.keys()) {
      if (client.queued > LOW_WATER) return false;
    }
    clearTimeout(this.#pressureTimer);
    this.#term.resume();
    return true;
  }
}
