/**
 * The creating process's attach to a new docker sandbox's container, made after the engine's
 * create and before its start: the one way in for the server's two tokens and the relay's key
 * (written on the container's stdin, which the start script reads before anything else runs, then closed), and
 * the way out for what the start script and the server print, read until the server's
 * `listening` line. So nothing of the tokens is put in the container's file system (no archive
 * upload before the start), and the provider learns that the server listens when it says so,
 * instead of polling the engine and the server.
 *
 * The server's listening line names its default identity's capabilities (`server/main.ts`),
 * which the provider takes instead of asking for the server's document through the relay (one
 * request fewer: create returns ~9 ms sooner, though its first command then pays the first
 * request's costs; `docs/sdk/providers.md`). The output comes from the image's own `/bin/sh` and the server
 * running on the image's own libc, so what it says is trusted as far as anything the container
 * says, the capabilities document included: a forged line can only misdescribe or break that
 * sandbox, and the names pass `capabilityList`, which takes only names the SDK knows. Where the
 * line carries no valid list, the provider asks the server as before.
 *
 * @module
 */

import { capabilityList } from "../../../shared/capability_names.ts";
import { SandboxError, TimeoutError } from "../../errors/mod.ts";
import type { Engine, HijackedStream } from "./engine.ts";

/** The line the server prints once it listens (`server/main.ts`), whole. */
const LISTENING = /^(\{[^\n]*"event"\s*:\s*"listening"[^\n]*)\r?\n/m;
/** The start script's line naming what the image has (`launch.ts`). */
const PROBE = /^sandbar-probe(.*)$/m;

/** What a container said as its server started. */
export interface Started {
  /** What the image has of what capabilities depend on (`code`, `browser`). */
  has: Set<string>;
  /** The capability names of the server's listening line, or null when it gave none valid. */
  capabilities: string[] | null;
}

/** The capability names of a listening line, or null. */
function saidCapabilities(line: string): string[] | null {
  try {
    return capabilityList((JSON.parse(line) as { capabilities?: unknown }).capabilities);
  } catch {
    return null;
  }
}

/** An attach to a container that has not started yet. */
export class Startup {
  readonly #stream: HijackedStream;
  readonly #step: (step: "probed" | "listening") => void;
  #output = "";
  /** What the container said once the server listens; rejects if it ends first. */
  readonly listening: Promise<Started>;

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

  async #watch(): Promise<Started> {
    const decoder = new TextDecoder();
    let probed = false;
    let listening: string | null = null;
    while (true) {
      const frame = await this.#stream.frame();
      if (!frame) break;
      this.#output = (this.#output + decoder.decode(frame.data, { stream: true })).slice(-8000);
      const probe = PROBE.exec(this.#output);
      if (probe && !probed) {
        probed = true;
        this.#step("probed");
      }
      const line: RegExpExecArray | null = listening === null ? LISTENING.exec(this.#output) : null;
      if (line) {
        listening = line[1];
        this.#step("listening");
      }
      if (probe && listening !== null) {
        return {
          has: new Set(probe[1].split(" ").filter((n) => n)),
          capabilities: saidCapabilities(listening),
        };
      }
    }
    throw new SandboxError(`The docker sandbox did not start: ${this.#output.trim()}`.trim(), {
      suggestion: "The image needs glibc and /bin/sh; the message ends with what it printed.",
    });
  }

  /** {@linkcode listening}, or a TimeoutError at `deadline` (ms since the epoch). */
  async wait(id: string, deadline: number): Promise<Started> {
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
