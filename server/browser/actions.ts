/**
 * The eight things a caller does with its page, on top of puppeteer: each takes the identity's
 * {@linkcode PageSession} (already holding its turn) and answers in the wire shapes of
 * `docs/server/browser.md`. Operations other than navigate first wait for a navigation under
 * way (a form a click submitted) so they see the page it leads to.
 *
 * @module
 */

import type { HTTPResponse, Page, PDFOptions } from "puppeteer-core";
import { ApiError } from "../errors.ts";
import { refusalError } from "../guards/urls/index.ts";
import { evaluateScript, ScriptError, TERMINATED } from "./evaluate.ts";
import { pageFailure } from "./failures.ts";
import type { PageReportsSnapshot } from "./page_reports.ts";
import type { PageSession, Refusals } from "./session.ts";

/** How long non-navigating operations wait for a navigation under way. */
const SETTLE_MS = 30_000;
/** Blocked requests listed in a navigate answer. */
const BLOCKED_LISTED = 50;

/** When `navigate` answers. */
export type WaitUntil = "load" | "domcontentloaded" | "networkidle" | "commit";

/** Arguments of {@linkcode navigate}. */
export interface NavigateArgs {
  /** A URL the guard already allowed. */
  url: string;
  /** When to answer. */
  waitUntil: WaitUntil;
  /** Deadline in milliseconds. */
  timeoutMs: number;
  /** A viewport to set first. */
  viewport?: { width: number; height: number };
}

/** The answer of {@linkcode navigate}. */
export interface NavigateResult {
  /** The final URL. */
  url: string;
  /** The main response's HTTP status. */
  status: number | null;
  /** The page title. */
  title: string;
  /** Requests the guard refused during the navigation. */
  blocked: { url: string; code: string; rule: string }[];
}

/** The answer of click and type. */
export interface ActionResult {
  /** URL after the action. */
  url: string;
  /** Title after the action. */
  title: string;
  /** Whether a click started a navigation (click only). */
  navigated?: boolean;
}

/** The title, or `""` while the document is being replaced. */
async function titleOf(page: Page): Promise<string> {
  try {
    return await page.title();
  } catch {
    return "";
  }
}

function navigationFailure(e: unknown, url: string, ms: number, refusals: Refusals): Error {
  // The guard refused the main document (directly or at a redirect hop): say so, not net::ERR.
  if (refusals.mainFrame) return refusalError(refusals.mainFrame, "url");
  const message = e instanceof Error ? e.message : String(e);
  const viaProxy = /ERR_SOCKS|ERR_PROXY|ERR_TUNNEL/.test(message);
  const connection = refusals.connections.at(-1);
  if (viaProxy && connection) return refusalError(connection, "url");
  const unreachable = refusals.unreachable.at(-1);
  if (viaProxy && unreachable) {
    return new ApiError("invalid_request", `Navigation failed: ${unreachable} (${url})`, {
      param: "url",
    });
  }
  return pageFailure(e, `Navigation to ${url} did not finish within ${ms} ms`, (err) => {
    const net = /net::ERR_[A-Z_]+/.exec(err.message)?.[0];
    if (net) {
      return new ApiError("invalid_request", `Navigation failed: ${net} at ${url}`, {
        param: "url",
      });
    }
    return err;
  });
}

async function blank(page: Page): Promise<void> {
  await page.goto("about:blank", { waitUntil: "load", timeout: 5000 }).catch(() => {});
}

/** `goto` that answers once the main frame committed (the response started). */
async function gotoCommitted(page: Page, url: string, timeout: number) {
  let response: HTTPResponse | null = null;
  const onResponse = (r: HTTPResponse) => {
    if (r.request().isNavigationRequest() && r.frame() === page.mainFrame()) response = r;
  };
  const committed = Promise.withResolvers<void>();
  const onFrame = (frame: unknown) => {
    if (frame === page.mainFrame()) committed.resolve();
  };
  page.on("response", onResponse);
  page.on("framenavigated", onFrame);
  const loading = page.goto(url, { waitUntil: "load", timeout });
  loading.catch(() => {});
  try {
    await Promise.race([committed.promise, loading]);
    return response;
  } finally {
    page.off("response", onResponse);
    page.off("framenavigated", onFrame);
  }
}

/**
 * Go to a URL.
 */
export async function navigate(
  page: Page,
  refusals: Refusals,
  args: NavigateArgs,
): Promise<NavigateResult> {
  if (args.viewport) await page.setViewport(args.viewport);
  let response: HTTPResponse | null;
  try {
    if (args.waitUntil === "commit") {
      response = await gotoCommitted(page, args.url, args.timeoutMs);
    } else {
      const waitUntil = args.waitUntil === "networkidle" ? "networkidle0" : args.waitUntil;
      response = await page.goto(args.url, { waitUntil, timeout: args.timeoutMs });
    }
  } catch (e) {
    const failure = navigationFailure(e, args.url, args.timeoutMs, refusals);
    // A failed navigation leaves Chromium's error page; the caller gets a blank page instead.
    if (failure instanceof ApiError && failure.code !== "internal") await blank(page);
    throw failure;
  }
  return {
    url: page.url(),
    status: response?.status() ?? null,
    title: await titleOf(page),
    blocked: refusals.all.slice(0, BLOCKED_LISTED).map(({ url, code, rule }) => ({
      url,
      code,
      rule,
    })),
  };
}

/** Refuse a selector that does not parse now, rather than after waiting for it. */
async function checkSelector(page: Page, selector: string): Promise<void> {
  try {
    const handle = await page.$(selector);
    await handle?.dispose();
  } catch (e) {
    throw selectorFailure(e, selector, 0);
  }
}

function selectorFailure(e: unknown, selector: string, ms: number): Error {
  return pageFailure(
    e,
    `No visible element matched ${JSON.stringify(selector)} within ${ms} ms`,
    (err) => {
      if (/not a valid selector|Unknown selector|SyntaxError|Invalid selector/i.test(err.message)) {
        return new ApiError("invalid_arguments", `Bad selector: ${err.message}`, {
          param: "selector",
        });
      }
      return err;
    },
  );
}

/**
 * Before an input event: note in the page whether it starts a cross-document navigation. The
 * Navigation API's `navigate` event fires for every one the page starts (link, form, script),
 * in the task that starts it, before any request goes out.
 */
const WATCH_NAVIGATION = `(() => {
  globalThis.__sandbarNavigating = false;
  if (globalThis.__sandbarWatching) return;
  globalThis.__sandbarWatching = true;
  globalThis.navigation?.addEventListener("navigate", (e) => {
    if (!e.destination.sameDocument && !e.downloadRequest) globalThis.__sandbarNavigating = true;
  });
})()`;

/**
 * After the input event: let the tasks it queued run (a form submission navigates in a task of
 * its own), then read the note. A destroyed context means the page already moved on.
 */
const NAVIGATION_STARTED = `new Promise((resolve) => setTimeout(
  () => resolve(globalThis.__sandbarNavigating === true), 0))`;

/**
 * Run an input action and, if it started a navigation of the page, wait for that navigation's
 * `load`. True when it navigated.
 */
async function withNavigation(
  session: PageSession,
  page: Page,
  timeoutMs: number,
  action: () => Promise<void>,
): Promise<boolean> {
  await session.navigation.settled(timeoutMs);
  const before = session.navigation.count;
  await page.evaluate(WATCH_NAVIGATION).catch(() => {});
  await action();
  const noted = await page.evaluate(NAVIGATION_STARTED).catch(() => true) === true;
  const navigated = session.navigation.count !== before ||
    (noted && await session.navigation.startedAfter(before, timeoutMs));
  if (navigated) await session.navigation.settled(timeoutMs);
  return navigated;
}

/** Wait for a visible element matching `selector` and click it. */
export async function click(
  session: PageSession,
  page: Page,
  selector: string,
  timeoutMs: number,
): Promise<ActionResult> {
  const navigated = await withNavigation(session, page, timeoutMs, async () => {
    await checkSelector(page, selector);
    try {
      await page.locator(selector).setVisibility("visible").setTimeout(timeoutMs).click();
    } catch (e) {
      throw selectorFailure(e, selector, timeoutMs);
    }
  });
  return { url: page.url(), title: await titleOf(page), navigated };
}

/** Wait for a visible element matching `selector`, optionally clear it, and type into it. */
export async function type(
  session: PageSession,
  page: Page,
  args: { selector: string; text: string; clear: boolean; delayMs: number; timeoutMs: number },
): Promise<ActionResult> {
  // Typing Enter in a form submits it: wait for that navigation like a click's.
  await withNavigation(session, page, args.timeoutMs, async () => {
    await checkSelector(page, args.selector);
    try {
      const locator = page.locator(args.selector).setVisibility("visible").setTimeout(
        args.timeoutMs,
      );
      if (args.clear) await locator.fill("");
      const handle = await locator.waitHandle();
      try {
        await handle.type(args.text, { delay: args.delayMs });
      } finally {
        await handle.dispose().catch(() => {});
      }
    } catch (e) {
      throw selectorFailure(e, args.selector, args.timeoutMs);
    }
  });
  return { url: page.url(), title: await titleOf(page) };
}

/** How long a page that passed an evaluation's deadline gets to show it still responds. */
const RESPONSIVE_MS = 2000;
/**
 * Past an evaluation's deadline, how long the protocol gets to report that it stopped the
 * script, before the page is probed (so a busy machine does not cost a page that was fine).
 */
const TERMINATION_GRACE_MS = 500;

/** Whether the page's renderer answers a trivial evaluation in time. */
async function responds(page: Page): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), RESPONSIVE_MS);
  });
  try {
    return await Promise.race([page.evaluate("1").then(() => true, () => false), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Evaluate a script in the page (see `evaluate.ts`). A script that runs past the deadline is
 * stopped by the protocol; one whose promise never settles is left behind; a page whose
 * renderer no longer answers (a loop after an `await`) is closed, and the next operation starts
 * on a new one.
 */
export async function evaluate(
  session: PageSession,
  page: Page,
  script: string,
  timeoutMs: number,
): Promise<{ result: unknown }> {
  await session.navigation.settled(timeoutMs);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<"expired">((resolve) => {
    timer = setTimeout(() => resolve("expired"), timeoutMs + TERMINATION_GRACE_MS);
  });
  const late = `The script did not finish within ${timeoutMs} ms`;
  try {
    const running = evaluateScript(page, script, timeoutMs);
    running.catch(() => {});
    const outcome = await Promise.race([running.then((json) => ({ json })), expired]);
    if (outcome === "expired") {
      if (await responds(page)) throw new ApiError("timeout", late);
      await session.resetPage();
      throw new ApiError("timeout", `${late}; the page stopped answering and was closed`);
    }
    return { result: JSON.parse(outcome.json) };
  } catch (e) {
    if (e instanceof ScriptError && e.message.includes(TERMINATED)) {
      throw new ApiError("timeout", late);
    }
    if (e instanceof ScriptError) {
      throw new ApiError("invalid_arguments", `The script failed: ${e.message}`, {
        param: "script",
      });
    }
    throw pageFailure(
      e,
      late,
      (err) =>
        /Execution context was destroyed|Cannot find default execution context/.test(err.message)
          ? new ApiError("conflict", "The page navigated while the script ran", { cause: err })
          : err,
    );
  } finally {
    clearTimeout(timer);
  }
}

/** URL, title, serialized HTML and visible text of the page. */
export async function content(session: PageSession, page: Page) {
  await session.navigation.settled(SETTLE_MS);
  try {
    const html = await page.content();
    const text = await page.evaluate("document.body ? document.body.innerText : ''");
    return { url: page.url(), title: await titleOf(page), html, text: String(text ?? "") };
  } catch (e) {
    throw pageFailure(e, "Reading the page timed out");
  }
}

/** A PNG of the viewport or the whole page. */
export async function screenshot(
  session: PageSession,
  page: Page,
  fullPage: boolean,
): Promise<Uint8Array> {
  await session.navigation.settled(SETTLE_MS);
  try {
    return await page.screenshot({ type: "png", fullPage });
  } catch (e) {
    throw pageFailure(e, "The screenshot timed out");
  }
}

/** A PDF of the page. */
export async function pdf(
  session: PageSession,
  page: Page,
  options: { format: NonNullable<PDFOptions["format"]>; landscape: boolean; background: boolean },
): Promise<Uint8Array> {
  await session.navigation.settled(SETTLE_MS);
  try {
    return await page.pdf({
      format: options.format,
      landscape: options.landscape,
      printBackground: options.background,
    });
  } catch (e) {
    throw pageFailure(e, "Printing the PDF timed out");
  }
}

/** What the page reported since the previous call. */
export function consoleReports(session: PageSession): PageReportsSnapshot {
  return session.reports.take();
}
