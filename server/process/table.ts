/**
 * The process table: every process the server is running for a caller (`shell`, `shell_stream`,
 * `process_start`, `run_code`), by pid, each owned by the identity that started it. Background
 * processes stay listed after they exit (the newest {@linkcode KEEP_FINISHED} per identity) so
 * their exit code and output can still be read. Closing the table kills every group and waits for
 * each to be reaped, so no process outlives the server.
 *
 * @module
 */

import { confinements } from "../confine/confinement.ts";
import { ApiError } from "../errors.ts";
import type { ServerState, Service } from "../state.ts";
import { OutputLog, type StreamName } from "./output.ts";
import { type ExitInfo, ManagedProcess, type SpawnRequest } from "./process_group.ts";

/** Finished background processes kept per identity. */
export const KEEP_FINISHED = 128;

/** Output bytes the finished processes of one identity may hold together. */
export const KEEP_FINISHED_BYTES = 256 * 1024 * 1024;

/** Processes one identity may have running at once. */
export const MAX_RUNNING = 256;

/** How long `close()` waits for killed groups to be reaped. */
const CLOSE_WAIT_MS = 5000;

/** What kind of request started a process. */
export type ProcessKind = "shell" | "background";

/** A process in the table. */
export interface ProcessEntry {
  /** The running (or finished) process. */
  process: ManagedProcess;
  /** Owner. */
  identity: string;
  /** How it was started. */
  kind: ProcessKind;
  /** Label given at start. */
  tag: string | null;
  /** Shell form. */
  cmd: string | null;
  /** Exec form. */
  argv: string[] | null;
  /** Working directory. */
  cwd: string;
  /** Output buffer (background processes only). */
  log: OutputLog | null;
  /** Set once exited. */
  exit: ExitInfo | null;
}

/** What {@linkcode ProcessTable.spawn} needs besides the spawn request. */
export interface EntryOptions {
  /** Owner. */
  identity: string;
  /** Kind. */
  kind: ProcessKind;
  /** Label. */
  tag?: string | null;
  /** For background processes: the output buffer size in bytes. */
  bufferBytes?: number;
  /** For shell processes: where output goes as it is read. */
  onChunk?: (type: StreamName, bytes: Uint8Array) => void;
}

/**
 * The table service.
 */
export class ProcessTable implements Service {
  readonly #entries = new Map<number, ProcessEntry>();
  readonly #confine: ((identity: string, request: SpawnRequest) => void) | null;
  #closed = false;

  /** A table whose requests `confine` fits to their identity's confinement (none: unconfined). */
  constructor(confine: ((identity: string, request: SpawnRequest) => void) | null = null) {
    this.#confine = confine;
  }

  /** Start a process and list it. Throws what spawning throws. */
  spawn(request: SpawnRequest, options: EntryOptions): ProcessEntry {
    if (this.#closed) throw new Error("the process table is closed");
    const running = this.list(options.identity).filter((e) => e.exit === null).length;
    if (running >= MAX_RUNNING) {
      throw new ApiError("concurrency_limited", `${MAX_RUNNING} processes are running already`, {
        retryAfter: 1,
      });
    }
    const log = options.kind === "background"
      ? new OutputLog(options.bufferBytes ?? 1 << 20)
      : null;
    const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
    const onChunk = log
      ? (type: StreamName, bytes: Uint8Array) =>
        log.append(type, decoders[type].decode(bytes, { stream: true }), bytes.byteLength)
      : options.onChunk ?? (() => {});
    if (!request.spawner) this.#confine?.(options.identity, request);
    const process = new ManagedProcess(request, onChunk);
    const entry: ProcessEntry = {
      process,
      identity: options.identity,
      kind: options.kind,
      tag: options.tag ?? null,
      cmd: request.cmd ?? null,
      argv: request.argv ?? null,
      cwd: request.cwd,
      log,
      exit: null,
    };
    this.#entries.set(process.pid, entry);
    process.exited.then((exit) => {
      entry.exit = exit;
      if (log) {
        for (const type of ["stdout", "stderr"] as const) {
          const rest = decoders[type].decode();
          if (rest) log.append(type, rest, 0);
        }
        // A dev server stopped by the default timeout must not vanish without a word: its log
        // says why it ended, where a reader of its output looks.
        if (exit.timedOut) {
          const line = `[sandbar] stopped after its timeout of ${request.timeoutMs / 1000} s ` +
            "(start it with timeout 0 for none)\n";
          log.append("stderr", line, line.length);
        }
        log.close();
      }
      if (entry.kind === "shell") this.#entries.delete(process.pid);
      else this.#trim(entry.identity);
    });
    return entry;
  }

  /** Forget the oldest finished processes beyond the count and byte budgets. */
  #trim(identity: string): void {
    const finished = [...this.#entries.values()]
      .filter((e) => e.identity === identity && e.kind === "background" && e.exit);
    let bytes = finished.reduce((sum, e) => sum + (e.log?.held ?? 0), 0);
    let count = finished.length;
    for (const e of finished) {
      if (count <= KEEP_FINISHED && bytes <= KEEP_FINISHED_BYTES) break;
      this.#entries.delete(e.process.pid);
      count--;
      bytes -= e.log?.held ?? 0;
    }
  }

  /** The entry of `pid` if `identity` owns it. */
  get(pid: number, identity: string): ProcessEntry | undefined {
    const e = this.#entries.get(pid);
    return e && e.identity === identity ? e : undefined;
  }

  /** Entries of `identity`, oldest first. */
  list(identity: string): ProcessEntry[] {
    return [...this.#entries.values()]
      .filter((e) => e.identity === identity)
      .sort((a, b) => a.process.startedAt.getTime() - b.process.startedAt.getTime());
  }

  /**
   * Kill every running group, wait (bounded) until each leader is reaped, then let go of every
   * descriptor still held, so that every `exited` resolves and the server can end.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const pending = [...this.#entries.values()].filter((e) => e.exit === null);
    for (const e of pending) e.process.kill("SIGKILL");
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all(pending.map((e) => e.process.reaped)),
      new Promise((r) => (timer = setTimeout(r, CLOSE_WAIT_MS))),
    ]);
    clearTimeout(timer);
    // Output still unread, a pipe a runaway that left its group (`setsid prog &`) holds, or a
    // leader in uninterruptible sleep: none of it may keep the server from ending.
    for (const e of pending) e.process.release();
    this.#entries.clear();
  }
}

/**
 * The server's process table (one per server).
 */
export function processTable(state: ServerState): ProcessTable {
  return state.service(
    "process",
    () =>
      new ProcessTable((identity, request) => {
        const confined = confinements(state);
        request.spawner = confined.spawner(identity) ?? undefined;
        request.env = confined.environment(identity, request.env);
      }),
  );
}
