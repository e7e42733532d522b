/**
 * The creating process's attach to a new docker sandbox's container, made after the engine's
 * create and before its start: the one way in for the server's two tokens and the relay's key
 * (written on the container's stdin, which the start script reads before anything else runs, then closed), and
 * the way out for what the start script and the server print, read until the server's
 * `listening` line. So nothing of the tokens is put in the container's file system (no archive
 * upload before the start), and the provider learns that the server listens when it says so,
 * instead of polling the engine and the server.
 *
 * The container's output is not trusted for anything but timing: a line the image's programs
 * forge only makes the provider ask the server sooner (the capabilities request still has to
 * succeed through the relay).
 *
 * @module
 */

import { SandboxError, TimeoutError } from "../../errors/mod.ts";
import type { Engine, HijackedStream } from "./engine.ts";

/** The line the server prints once it listens (`server/main.ts`). */
const LISTENING = /"event"\s*:\s*"listening"/;
/** The start script's line naming what the image has (`launch.ts`). */
const PROBE = /^sandbar-probe(.*)$/m;

/** An attach to a container that has not started yet. */
export class Startup {
  readonly #stream: HijackedStream;
  readonly #step: (step: "probed" | "listening") => void;
  #output = "";
  /** What the image has (`code`, `browser`) once the server listens; rejects if it ends first. */
  readonly listening: Promise<Set<string>>;

  private constructor(stream: HijackedStream, step: (step: "probed" | "listening") => void) {
    this.#stream = stream;
    this.#step = step;
    this.listening = this.#watch();
    this.listening.catch(() => {});
  }

  /**
   * Attach to `container`'s stdin, stdout and stderr (before its start); `step` hears when the
   * probe line and the listening line arrive.
   */
  static async attach(
    engine: Engine,
    container: string,
    step: (step: "probed" | "listening") => void = () => {},
  ): Promise<Startup> {
    const stream = await engine.hijack(`/containers/${container}/attach`, undefined, {
      stream: 1,
      stdin: 1,
      stdout: 1,
      stderr: 1,
    });
    stream.unref();
    return new Startup(stream, step);
  }

  /** Write the tokens and the relay's key on the container's stdin and end it. */
  async sendTokens(serverToken: string, accessToken: string, relayKey: string): Promise<void> {
    await this.#stream.write(
      new TextEncoder().encode(`${serverToken}\n${accessToken}\n${relayKey}\n`),
    );
    await this.#stream.closeWrite();
  }

  async #watch(): Promise<Set<string>> {
    const decoder = new TextDecoder();
    let probed = false;
    let listening = false;
    while (true) {
      const frame = await this.#stream.frame();
      if (!frame) break;
      this.#output = (this.#output + decoder.decode(frame.data, { stream: true })).slice(-8000);
      const probe = PROBE.exec(this.#output);
      if (probe && !probed) {
        probed = true;
        this.#step("probed");
      }
      if (!listening && LISTENING.test(this.#output)) {
        listening = true;
        this.#step("listening");
      }
      if (probe && listening) return new Set(probe[1].split(" ").filter((n) => n));
    }
    throw new SandboxError(`The docker sandbox did not start: ${this.#output.trim()}`.trim(), {
      suggestion: "The image needs glibc and /bin/sh; the message ends with what it printed.",
    });
  }

  /** {@linkcode listening}, or a TimeoutError at `deadline` (ms since the epoch). */
  async wait(id: string, deadline: number): Promise<Set<string>> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(
          new TimeoutError(
            `Sandbox ${id}'s server did not say it listens in time (${
              this.#output.trim().slice(-300) || "no output"
            })`,
          ),
        );
      }, Math.max(0, deadline - Date.now()));
    });
    try {
      return await Promise.race([this.listening, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Detach (the container goes on; its output goes to its log alone). */
  close(): void {
    this.#stream.close();
  }
}
