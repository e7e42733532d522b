/**
 * The host side's transport: one engine child process with piped stdio. It knows nothing of JSON-RPC; it
 * delivers stdout lines, drains stderr into a bounded tail, writes lines to stdin, and ends the
 * process by escalation (close stdin, SIGTERM, SIGKILL), always awaiting the exit status so that
 * no zombie remains.
 *
 * @module
 */
import { type LineSink, LineSplitter, readLines } from "./line_reader.ts";
import { LineWriter } from "./line_writer.ts";
import { TailBuffer } from "../shared/tail_buffer.ts";

/** How to start an engine: argv without a shell, its directory and its environment. */
export interface SpawnSpec {
  /** Program and arguments. */
  command: string[];
  /** Working directory. */
  cwd?: string;
  /** The complete environment of the child. */
  env: Record<string, string>;
}

/** Limits of one engine process. */
export interface ProcessLimits {
  /** The longest stdout line accepted, in bytes. */
  maxLineBytes: number;
  /** How much of stderr is kept for error messages, in bytes. */
  stderrBytes: number;
}

/** How the process ended, as far as the host could tell. */
export interface ProcessEnd {
  /** The exit status, when the process has exited. */
  status?: Deno.CommandStatus;
  /** The last bytes of stderr. */
  stderrTail: string;
}

/** Words an exit for error messages: `exit code 3`, `signal SIGKILL` or `still running`. */
export function describeEnd(end: ProcessEnd): string {
  const how = !end.status
    ? "closed stdout while still running"
    : end.status.signal
    ? `was killed by ${end.status.signal}`
    : `exited with code ${end.status.code}`;
  const tail = end.stderrTail.trim();
  return tail ? `${how}; stderr tail:\n${tail}` : `${how}; stderr was empty`;
}

/** How long an ended engine gets to deliver its exit status and stderr before errors quote them. */
const SETTLE_MS = 250;

/** A running engine process. */
export class EngineProcess {
  readonly #child: Deno.ChildProcess;
  readonly #writer: LineWriter;
  readonly #stderr: TailBuffer;
  readonly #stderrDone: Promise<void>;
  #exit: Deno.CommandStatus | undefined;
  /** Settles when stdout has ended or the process has exited, whichever comes first. */
  readonly ended: Promise<ProcessEnd>;
  /** The exit status; always awaited by {@linkcode shutdown}. */
  readonly status: Promise<Deno.CommandStatus>;

  /** Starts the process; throws what `Deno.Command` throws when it cannot. */
  constructor(spec: SpawnSpec, limits: ProcessLimits, sink: LineSink) {
    const [program, ...args] = spec.command;
    this.#child = new Deno.Command(program, {
      args,
      cwd: spec.cwd,
      env: spec.env,
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      // Its own process group, so the escalation reaches what the engine started too.
      detached: true,
    }).spawn();
    this.status = this.#child.status.then((status) => this.#exit = status);
    this.#writer = new LineWriter(this.#child.stdin);
    this.#stderr = new TailBuffer(limits.stderrBytes);
    this.#stderrDone = this.#drainStderr();
    const stdoutDone = readLines(this.#child.stdout, new LineSplitter(limits.maxLineBytes, sink));
    this.ended = Promise.race([stdoutDone, this.status]).then(() => this.#settle());
  }

  /** The child's process id. */
  get pid(): number {
    return this.#child.pid;
  }

  /** The last bytes the engine wrote on stderr. */
  stderrTail(): string {
    return this.#stderr.text();
  }

  /** Writes one line to the engine's stdin, resolving once written. */
  send(line: string): Promise<void> {
    return this.#writer.write(line);
  }

  /**
   * Queues one line for the engine's stdin without waiting for it. A line the engine can no longer
   * take is dropped: the process is gone, which the end of stdout reports.
   */
  post(line: string): void {
    this.#writer.queue(line);
  }

  /** Closes the engine's stdin, which a conforming engine answers by exiting. */
  closeStdin(): Promise<void> {
    return this.#writer.close();
  }

  /** Sends a signal to the engine's process group, falling back to the engine alone. */
  signal(signal: Deno.Signal): void {
    try {
      Deno.kill(-this.#child.pid, signal);
    } catch {
      try {
        this.#child.kill(signal);
      } catch {
        // Already gone.
      }
    }
  }

  /**
   * Ends the process: close stdin, then SIGTERM, then SIGKILL, each after `graceMs` without an
   * exit. Resolves with the exit status once the process is reaped.
   */
  async shutdown(graceMs: number): Promise<Deno.CommandStatus> {
    const steps: (() => unknown)[] = [
      () => this.closeStdin(),
      () => this.signal("SIGTERM"),
      () => this.signal("SIGKILL"),
    ];
    for (const step of steps) {
      step();
      if (await exitsWithin(this.status, graceMs)) break;
    }
    const status = await this.status;
    // Whatever the engine left in its group goes too; the group may already be empty.
    try {
      Deno.kill(-this.#child.pid, "SIGKILL");
    } catch {
      // No such group left.
    }
    await this.#stderrDone;
    return status;
  }

  async #drainStderr(): Promise<void> {
    try {
      for await (const chunk of this.#child.stderr) this.#stderr.push(chunk);
    } catch {
      // The pipe broke with the process; what was read is kept.
    }
  }

  /** Gives the exit status and the rest of stderr a moment to arrive, so errors can quote them. */
  async #settle(): Promise<ProcessEnd> {
    await exitsWithin(Promise.all([this.status, this.#stderrDone]), SETTLE_MS);
    return { status: this.#exit, stderrTail: this.stderrTail() };
  }
}

async function exitsWithin(status: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), ms));
  try {
    return await Promise.race([status.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
