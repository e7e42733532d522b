/**
 * The browser group: navigate, screenshot, content, click, type, evaluate, pdf and console on
 * the caller's own page of a shared headless Chromium (see `docs/server/browser.md`).
 *
 * Every navigation URL is judged by the URL guard before Chromium is even launched; the page's
 * own requests and connections are judged inside the session (request interception and the
 * context's guard proxy).
 *
 * @module
 */

import type { Context } from "hono";
import * as actions from "../../browser/actions.ts";
import { browserGoneError, isBrowserGone } from "../../browser/failures.ts";
import { BrowserManager } from "../../browser/manager.ts";
import { confinements } from "../../confine/confinement.ts";
import type { PageSession, Refusals } from "../../browser/session.ts";
import { refusalError, UrlGuard } from "../../guards/urls/index.ts";
import { type ServerEnv, tcpAddresses } from "../../state.ts";
import { readBody } from "../../request_reader.ts";
import type { GroupHandlers } from "../../pipeline/handler.ts";
import type { BrowserId } from "../../endpoints.ts";
import type { Page } from "puppeteer-core";
import {
  ClickBody,
  EvaluateBody,
  NavigateBody,
  PdfBody,
  ScreenshotBody,
  TypeBody,
} from "./schemas.ts";

const CLICK_TIMEOUT_MS = 10_000;
const NAVIGATE_TIMEOUT_MS = 30_000;

/** The server's browser manager, made on first use and closed with the server. */
function manager(c: Context<ServerEnv>): BrowserManager {
  const state = c.var.state;
  return state.service("browser", () => {
    // On abstract sockets the server has no TCP address: 127.0.0.1:9000 is then a user's.
    const self = tcpAddresses(state.addresses);
    return new BrowserManager({
      stateDir: state.stateDir,
      guard: new UrlGuard(state.policy.urlAllow, state.policy.urlDeny, self),
      env: Deno.env.toObject(),
      confine: (dir, executable) => confinements(state).browser(dir, executable),
    });
  });
}

/**
 * Run `op` on the caller's page. When Chromium turns out to be gone, a `retry`able operation
 * (navigate: it makes the page's state anew anyway) runs once more on a relaunched browser;
 * the others answer `internal` and the next request starts a new browser.
 */
async function onPage<T>(
  c: Context<ServerEnv>,
  op: (session: PageSession, page: Page, refusals: Refusals) => Promise<T>,
  retry = false,
): Promise<T> {
  const browsers = manager(c);
  const attempt = async () => {
    const session = await browsers.session(c.var.identity.id);
    return await session.run((page, refusals) => op(session, page, refusals));
  };
  try {
    return await attempt();
  } catch (e) {
    if (!isBrowserGone(e) && !isGoneApiError(e)) throw e;
    if (!retry) throw browserGoneError(e);
    await browsers.settle();
    try {
      return await attempt();
    } catch (again) {
      throw isBrowserGone(again) ? browserGoneError(again) : again;
    }
  }
}

function isGoneApiError(e: unknown): boolean {
  return e instanceof Error && isBrowserGone((e as Error & { cause?: unknown }).cause);
}

function bytes(data: Uint8Array, type: string): Response {
  return new Response(data as Uint8Array<ArrayBuffer>, {
    headers: { "content-type": type, "content-length": String(data.byteLength) },
  });
}

/** The browser group's handlers. */
export const browserHandlers: GroupHandlers<BrowserId> = {
  browser_navigate: async (c) => {
    const body = await readBody(c, NavigateBody);
    const refusal = manager(c).guard.checkUrl(body.url, true);
    if (refusal) throw refusalError(refusal, "url");
    const args = {
      url: body.url,
      waitUntil: body.wait_until ?? "load",
      timeoutMs: body.timeout_ms ?? NAVIGATE_TIMEOUT_MS,
      viewport: body.viewport,
    } as const;
    return c.json(
      await onPage(c, (_s, page, refusals) => actions.navigate(page, refusals, args), true),
    );
  },
  browser_screenshot: async (c) => {
    const body = await readBody(c, ScreenshotBody);
    const png = await onPage(c, (s, page) => actions.screenshot(s, page, body.full_page ?? false));
    return bytes(png, "image/png");
  },
  browser_content: async (c) => c.json(await onPage(c, (s, page) => actions.content(s, page))),
  browser_click: async (c) => {
    const body = await readBody(c, ClickBody);
    const ms = body.timeout_ms ?? CLICK_TIMEOUT_MS;
    return c.json(await onPage(c, (s, page) => actions.click(s, page, body.selector, ms)));
  },
  browser_type: async (c) => {
    const body = await readBody(c, TypeBody);
    const args = {
      selector: body.selector,
      text: body.text,
      clear: body.clear ?? false,
      delayMs: body.delay_ms ?? 0,
      timeoutMs: body.timeout_ms ?? CLICK_TIMEOUT_MS,
    };
    return c.json(await onPage(c, (s, page) => actions.type(s, page, args)));
  },
  browser_evaluate: async (c) => {
    const body = await readBody(c, EvaluateBody);
    const ms = body.timeout_ms ?? NAVIGATE_TIMEOUT_MS;
    return c.json(await onPage(c, (s, page) => actions.evaluate(s, page, body.script, ms)));
  },
  browser_pdf: async (c) => {
    const body = await readBody(c, PdfBody);
    const options = {
      format: body.format ?? "A4",
      landscape: body.landscape ?? false,
      background: body.print_background ?? true,
    } as const;
    return bytes(await onPage(c, (s, page) => actions.pdf(s, page, options)), "application/pdf");
  },
  browser_console: async (c) => {
    // Nothing to report before the first page: answer without launching Chromium.
    const session = await manager(c).existing(c.var.identity.id);
    const empty = { messages: [], errors: [], blocked: [], dropped: 0 };
    return c.json(session ? actions.consoleReports(session) : empty);
  },
};
