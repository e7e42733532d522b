/**
 * `client.browser`: the browser group (`docs/server/browser.md`), a real headless Chromium
 * with one page per identity. Opt-in on the server: off (`EndpointNotAvailableError`, rule
 * `default:opt-in:browser`) unless the policy turns it on.
 *
 * @module
 */

import type { ConsoleEntries, NavigateResult, PageAction, PageContent } from "../models/browser.ts";
import { waitingRequestTimeout } from "./process.ts";
import { type CallOptions, callRequest, type ServerTransport } from "./transport.ts";

/** Options of calls that wait on the page (`timeoutMs` is the page's own deadline). */
export interface PageWaitOptions extends CallOptions {
  /** How long the page may take, in milliseconds (1 to 120 000). */
  timeoutMs?: number;
}

/** Options of `navigate`. */
export interface NavigateOptions extends PageWaitOptions {
  /** `load` (default), `domcontentloaded`, `networkidle` or `commit`. */
  waitUntil?: "load" | "domcontentloaded" | "networkidle" | "commit";
  /** Set the viewport (kept for later calls). */
  viewport?: { width: number; height: number };
}

/** Options of `type`. */
export interface TypeOptions extends PageWaitOptions {
  /** Clear the field first. */
  clear?: boolean;
  /** Milliseconds between keys (0 to 1000). */
  delayMs?: number;
}

/** Options of `pdf`. */
export interface PdfOptions extends CallOptions {
  /** Paper format (default `A4`). */
  format?: "A4" | "Letter" | "Legal" | "A3" | "A5" | "Tabloid";
  /** Landscape orientation. */
  landscape?: boolean;
  /** Print background graphics (default true). */
  printBackground?: boolean;
}

/**
 * The browser group: navigate, screenshot, content, click, type, evaluate, pdf, console.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Sandbox } from "@sandbar/sandbar";
 *
 * await using sandbox = await Sandbox.create({
 *   policy: { endpoints: { browser: true }, url_allow: ["http://127.0.0.1:*"] },
 * });
 * await sandbox.files.write("/home/user/site/index.html", "<title>Hi</title><p>hello</p>");
 * await sandbox.commands.start("python3 -m http.server 8000 -d /home/user/site", { timeout: 0 });
 * const client = sandbox.server;
 * while (!(await sandbox.commands.run("curl -sf http://127.0.0.1:8000/ >/dev/null")).success) {
 *   await new Promise((r) => setTimeout(r, 100)); // until the page server listens
 * }
 * const page = await client.browser.navigate("http://127.0.0.1:8000/");
 * assert.deepEqual([page.status, page.title], [200, "Hi"]);
 * assert.equal(await client.browser.evaluate<string>("document.querySelector('p').textContent"), "hello");
 * const png = await client.browser.screenshot();
 * assert.deepEqual([...png.slice(1, 4)], [80, 78, 71]); // "PNG"
 * ```
 */
export class BrowserApi {
  readonly #t: ServerTransport;

  /** Made by `ServerClient`; not meant to be constructed directly. */
  constructor(transport: ServerTransport) {
    this.#t = transport;
  }

  /** The HTTP timeout for a page call that may take `timeoutMs` (default `defaultMs`). */
  #waiting(options: PageWaitOptions, defaultMs: number) {
    return {
      signal: options.signal,
      timeout: options.requestTimeout ??
        waitingRequestTimeout(this.#t.timeout, (options.timeoutMs ?? defaultMs) / 1000, 0),
    };
  }

  /** Go to an `http:` / `https:` URL (through the server's URL guard). */
  navigate(url: string, options: NavigateOptions = {}): Promise<NavigateResult> {
    return this.#t.json<NavigateResult>("browser_navigate", {
      ...this.#waiting(options, 30_000),
      json: {
        url,
        wait_until: options.waitUntil,
        timeout_ms: options.timeoutMs,
        viewport: options.viewport,
      },
    });
  }

  /** PNG bytes of the viewport, or of the whole page with `fullPage`. */
  screenshot(options: CallOptions & { fullPage?: boolean } = {}): Promise<Uint8Array> {
    return this.#t.bytes("browser_screenshot", {
      ...callRequest(options),
      json: { full_page: options.fullPage },
    });
  }

  /** The page's URL, title, HTML and visible text. */
  content(options: CallOptions = {}): Promise<PageContent> {
    return this.#t.json<PageContent>("browser_content", callRequest(options));
  }

  /** Wait for the first visible element matching `selector` and click it. */
  click(selector: string, options: PageWaitOptions = {}): Promise<PageAction> {
    return this.#t.json<PageAction>("browser_click", {
      ...this.#waiting(options, 10_000),
      json: { selector, timeout_ms: options.timeoutMs },
    });
  }

  /** Wait for the element, focus it, and type `text` key by key. */
  type(selector: string, text: string, options: TypeOptions = {}): Promise<PageAction> {
    return this.#t.json<PageAction>("browser_type", {
      ...this.#waiting(options, 10_000),
      json: {
        selector,
        text,
        clear: options.clear,
        delay_ms: options.delayMs,
        timeout_ms: options.timeoutMs,
      },
    });
  }

  /** Evaluate a JavaScript expression in the page and return its JSON value. */
  async evaluate<T = unknown>(script: string, options: PageWaitOptions = {}): Promise<T> {
    const body = await this.#t.json<{ result: T }>("browser_evaluate", {
      ...this.#waiting(options, 30_000),
      json: { script, timeout_ms: options.timeoutMs },
    });
    return body.result;
  }

  /** PDF bytes of the page. */
  pdf(options: PdfOptions = {}): Promise<Uint8Array> {
    return this.#t.bytes("browser_pdf", {
      ...callRequest(options),
      json: {
        format: options.format,
        landscape: options.landscape,
        print_background: options.printBackground,
      },
    });
  }

  /** Console messages, page errors and blocked requests since the previous call. */
  console(options: CallOptions = {}): Promise<ConsoleEntries> {
    return this.#t.json<ConsoleEntries>("browser_console", callRequest(options));
  }
}
