/**
 * The browser group's long-lived service: one Chromium per server, launched on the first browser
 * request, shared by every identity (each in its own context), relaunched on the next request
 * after it died, and closed with the server.
 *
 * @module
 */

import type { Browser } from "puppeteer-core";
import { ApiError } from "../errors.ts";
import type { UrlGuard } from "../guards/urls/index.ts";
import type { Service } from "../state.ts";
import { findChromium, launchChromium, type LaunchedChromium } from "./chromium.ts";
import { PageSession } from "./session.ts";
import type { BrowserConfinement } from "../confine/confinement.ts";

/** Options of a {@linkcode BrowserManager}. */
export interface BrowserManagerOptions {
  /** The server's private directory; each Chromium gets a fresh directory inside it. */
  stateDir: string;
  /** The URL guard every context's proxy and request interception use. */
  guard: UrlGuard;
  /** Environment to read `SANDBAR_CHROMIUM` from. */
  env: Readonly<Record<string, string | undefined>>;
  /**
   * The kernel confinement of a Chromium whose files are in `dir` (null: none here); the
   * server's is `Confinements.browser`.
   */
  confine?: (dir: string, executable: string) => BrowserConfinement | null;
}

/** How long Chromium gets to close before it is killed. */
const CLOSE_GRACE_MS = 5000;
/** How long an operation that found Chromium gone waits to see it disconnect. */
const DISCONNECT_WAIT_MS = 2000;

/**
 * The browser service.
 */
export class BrowserManager implements Service {
  readonly #options: BrowserManagerOptions;
  #chromium: Promise<LaunchedChromium> | null = null;
  #sessions = new Map<string, Promise<PageSession>>();
  #closed = false;

  /** A manager; nothing is launched until the first {@linkcode session}. */
  constructor(options: BrowserManagerOptions) {
    this.#options = options;
  }

  /** The URL guard of every session. */
  get guard(): UrlGuard {
    return this.#options.guard;
  }

  /** The session of `identity` if it has one already; never launches anything. */
  async existing(identity: string): Promise<PageSession | null> {
    return await this.#sessions.get(identity)?.catch(() => null) ?? null;
  }

  /**
   * After an operation found the browser gone: wait (briefly) until its disconnection is seen
   * and its sessions are dropped, so the next {@linkcode session} relaunches it.
   */
  async settle(): Promise<void> {
    const launched = await this.#chromium?.catch(() => null);
    if (!launched) return;
    if (launched.browser.connected) {
      const gone = Promise.withResolvers<void>();
      const timer = setTimeout(gone.resolve, DISCONNECT_WAIT_MS);
      launched.browser.once("disconnected", () => gone.resolve());
      await gone.promise;
      clearTimeout(timer);
    }
    if (!launched.browser.connected) await this.#forget(launched);
  }

  /** The session of `identity`, launching Chromium and opening a context when needed. */
  session(identity: string): Promise<PageSession> {
    if (this.#closed) {
      return Promise.reject(new ApiError("conflict", "The server is shutting down"));
    }
    let s = this.#sessions.get(identity);
    if (!s) {
      s = this.#browser().then((b) => PageSession.open(b, this.#options.guard, identity));
      this.#sessions.set(identity, s);
      s.catch(() => {
        if (this.#sessions.get(identity) === s) this.#sessions.delete(identity);
      });
    }
    return s;
  }

  async #browser(): Promise<Browser> {
    const pending = this.#chromium;
    const current = await pending?.catch(() => null);
    if (current?.browser.connected) return current.browser;
    // Only the first caller to find Chromium missing or dead launches; the others wait for it.
    if (this.#chromium === pending) this.#chromium = this.#launch();
    return (await this.#chromium!).browser;
  }

  async #launch(): Promise<LaunchedChromium> {
    const executable = findChromium(this.#options.env);
    if (!executable) {
      throw new ApiError(
        "internal",
        "Chromium was not found: install the Debian package chromium, or set SANDBAR_CHROMIUM",
      );
    }
    let launched: LaunchedChromium;
    try {
      const confine = this.#options.confine;
      launched = await launchChromium(
        this.#options.stateDir,
        executable,
        confine && ((dir) => confine(dir, executable)),
      );
    } catch (e) {
      throw new ApiError("internal", `Chromium did not start: ${(e as Error).message}`, {
        cause: e,
      });
    }
    launched.browser.once("disconnected", () => void this.#forget(launched));
    return launched;
  }

  /** Chromium went away: drop its sessions so the next request starts a new one. */
  async #forget(launched: LaunchedChromium): Promise<void> {
    const mine = await this.#chromium?.catch(() => null);
    if (mine === launched) {
      this.#chromium = null;
      const sessions = [...this.#sessions.values()];
      this.#sessions = new Map();
      await Promise.allSettled(sessions.map(async (s) => (await s).abandon()));
    }
    // Always: a request that found this Chromium dead may have launched the next one before
    // this ran, and the dead one's helpers and directory are still to be cleaned up.
    await stop(launched);
  }

  /** Close every session and Chromium; leaves no process and no directory behind. */
  async close(): Promise<void> {
    this.#closed = true;
    const launched = await this.#chromium?.catch(() => null);
    this.#chromium = null;
    const sessions = [...this.#sessions.values()];
    this.#sessions = new Map();
    await Promise.allSettled(sessions.map(async (s) => (await s).abandon()));
    if (launched) await stop(launched);
  }
}

/** Close Chromium (killing it if it does not close in time) and remove its directory. */
async function stop(launched: LaunchedChromium): Promise<void> {
  const proc = launched.browser.process();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const graceExpired = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, CLOSE_GRACE_MS);
  });
  await Promise.race([launched.browser.close().catch(() => {}), graceExpired]);
  clearTimeout(timer);
  if (proc && proc.exitCode === null && proc.signalCode === null) {
    proc.kill("SIGKILL");
    await new Promise<void>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) resolve();
      else proc.once("exit", () => resolve());
    });
  }
  await removeDirectory(launched.dir);
}

/**
 * Remove a Chromium directory. When Chromium died rather than closed, its helpers (zygote,
 * renderers) may still be writing there for a moment, and a recursive remove that races them
 * fails with ENOTEMPTY; so try again until it is gone, for up to ten seconds.
 */
async function removeDirectory(dir: string): Promise<void> {
  for (let attempt = 0; attempt < 40; attempt++) {
    try {
      await Deno.remove(dir, { recursive: true });
      return;
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  console.error(`sandbar: could not remove ${dir}`);
}
