/**
 * One identity's browser: its own context (cookies, storage, cache), its own guard proxy, and
 * one page, with the page's reports and the state of its main-frame navigation. Operations of
 * one session run one at a time, in arrival order.
 *
 * @module
 */

import type { Browser, BrowserContext, HTTPRequest, Page } from "puppeteer-core";
import type { UrlGuard, UrlRefusal } from "../guards/urls/index.ts";
import { PageReports } from "./page_reports.ts";
import { SocksGuard } from "./socks_guard.ts";
import { NavigationTracker } from "./navigation_tracker.ts";

/** The viewport of a new page. */
export const DEFAULT_VIEWPORT = { width: 1280, height: 720 } as const;

/** Run in every document before its scripts: service worker registration fails. */
const REFUSE_SERVICE_WORKERS = `(() => {
  const container = globalThis.ServiceWorkerContainer?.prototype;
  if (!container) return;
  Object.defineProperty(container, "register", {
    value: () => Promise.reject(new DOMException("Service workers are off in this browser", "SecurityError")),
  });
})()`;

/** A refusal seen while one operation ran, for its answer. */
export interface Refusals {
  /** Every refusal, in order. */
  all: UrlRefusal[];
  /** The refusal of the main frame's own navigation request, if there was one. */
  mainFrame?: UrlRefusal;
  /** Refusals of the proxy (connections), which cannot be tied to one request. */
  connections: UrlRefusal[];
  /** Connections the proxy allowed but could not make, as sentences. */
  unreachable: string[];
}

/**
 * The browser of one identity.
 */
export class PageSession {
  /** The identity this session belongs to. */
  readonly identity: string;
  /** What the page reported since the last `console` call. */
  readonly reports: PageReports = new PageReports();
  /** The main frame's navigation state. */
  readonly navigation: NavigationTracker = new NavigationTracker();
  readonly #context: BrowserContext;
  readonly #proxy: SocksGuard;
  readonly #guard: UrlGuard;
  #page: Page | null = null;
  #queue: Promise<unknown> = Promise.resolve();
  #collector: Refusals | null = null;
  #closed = false;

  private constructor(
    identity: string,
    context: BrowserContext,
    proxy: SocksGuard,
    guard: UrlGuard,
  ) {
    this.identity = identity;
    this.#context = context;
    this.#proxy = proxy;
    this.#guard = guard;
  }

  /** Open a context for `identity` whose every connection goes through a new guard proxy. */
  static async open(browser: Browser, guard: UrlGuard, identity: string): Promise<PageSession> {
    let session: PageSession | undefined;
    const proxy = SocksGuard.listen(guard, {
      refused: (r) => session?.refusedConnection(r),
      unreachable: (_target, why) => session?.unreachableConnection(why),
    });
    try {
      const context = await browser.createBrowserContext({
        proxyServer: proxy.proxyServer,
        // Chromium bypasses proxies for loopback by default; `<-loopback>` removes that.
        proxyBypassList: ["<-loopback>"],
      });
      session = new PageSession(identity, context, proxy, guard);
      return session;
    } catch (e) {
      await proxy.close();
      throw e;
    }
  }

  /**
   * Run `op` on the page once every earlier operation of this session has finished. Refusals
   * of the URL guard during `op` are collected for its answer.
   */
  run<T>(op: (page: Page, refusals: Refusals) => Promise<T>): Promise<T> {
    const next = this.#queue.then(async () => {
      if (this.#closed) throw new Error("Target closed: the browser session ended");
      const page = await this.page();
      const refusals: Refusals = { all: [], connections: [], unreachable: [] };
      this.#collector = refusals;
      try {
        return await op(page, refusals);
      } finally {
        this.#collector = null;
      }
    });
    this.#queue = next.catch(() => {});
    return next;
  }

  /** The page, made on first use and again after it was closed or crashed. */
  async page(): Promise<Page> {
    if (this.#page && !this.#page.isClosed()) return this.#page;
    const page = await this.#context.newPage();
    await this.#prepare(page);
    this.#page = page;
    return page;
  }

  /** Close the page (it hung or crashed); the next operation gets a new `about:blank` one. */
  async resetPage(): Promise<void> {
    const page = this.#page;
    this.#page = null;
    this.navigation.reset();
    await page?.close().catch(() => {});
  }

  async #prepare(page: Page): Promise<void> {
    await page.setViewport(DEFAULT_VIEWPORT);
    await page.setRequestInterception(true);
    // A service worker's own requests are not intercepted (only the proxy sees them), so pages
    // get none: their requests always reach interception, and registering one is refused.
    await page.setBypassServiceWorker(true);
    await page.evaluateOnNewDocument(REFUSE_SERVICE_WORKERS);
    page.on("request", (request) => this.#decide(page, request));
    page.on("requestfailed", (request) => {
      if (this.#isMainNavigation(page, request)) this.navigation.finished();
    });
    page.on("requestfinished", (request) => {
      // A 204 or 205 answer to a navigation leaves the page as it was: no load follows.
      const status = request.response()?.status();
      if (this.#isMainNavigation(page, request) && (status === 204 || status === 205)) {
        this.navigation.finished();
      }
    });
    page.on("load", () => this.navigation.finished());
    page.on("console", (m) => this.reports.message(m.type(), m.text()));
    page.on("pageerror", (e) => {
      this.reports.error(e instanceof Error ? `${e.name}: ${e.message}` : String(e));
    });
    page.on("error", () => {
      // The renderer crashed: the next operation starts on a new page.
      if (this.#page === page) this.#page = null;
    });
    // One page per identity: windows the page opens are closed (their connections still went
    // through the proxy, so nothing reached a refused address).
    page.on("popup", (popup) => void popup?.close().catch(() => {}));
  }

  #isMainNavigation(page: Page, request: HTTPRequest): boolean {
    return request.isNavigationRequest() && request.frame() === page.mainFrame();
  }

  #decide(page: Page, request: HTTPRequest): void {
    if (request.isInterceptResolutionHandled()) return;
    const main = this.#isMainNavigation(page, request);
    const refusal = this.#guard.checkUrl(request.url(), false);
    if (refusal) {
      this.#refused(refusal, false, main);
      request.abort("blockedbyclient").catch(() => {});
      return;
    }
    if (main) this.navigation.started();
    request.continue().catch(() => {});
  }

  /** The proxy could not make a connection it allowed. */
  unreachableConnection(why: string): void {
    this.#collector?.unreachable.push(why);
  }

  /** The proxy refused a connection of this context. */
  refusedConnection(refusal: UrlRefusal): void {
    this.#refused(refusal, true);
  }

  #refused(refusal: UrlRefusal, connection: boolean, mainFrame = false): void {
    this.reports.blocked({ url: refusal.url, code: refusal.code, rule: refusal.rule });
    const c = this.#collector;
    if (!c) return;
    c.all.push(refusal);
    if (connection) c.connections.push(refusal);
    if (mainFrame) c.mainFrame = refusal;
  }

  /** Close the context and the proxy. */
  async close(): Promise<void> {
    this.#closed = true;
    this.navigation.reset();
    await this.#context.close().catch(() => {});
    await this.#proxy.close();
  }

  /** Close only the proxy (the browser is already gone). */
  async abandon(): Promise<void> {
    this.#closed = true;
    this.navigation.reset();
    await this.#proxy.close();
  }
}
