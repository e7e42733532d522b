/**
 * Models of the browser group.
 *
 * @module
 */

/** A request of the page the URL guard refused. */
export interface BlockedRequest {
  /** The URL refused. */
  url: string;
  /** `url_denied` or `url_invalid`. */
  code: string;
  /** The rule that refused it (`private:loopback`, `url_deny:<pattern>`, `url_allow`). */
  rule: string;
  /** Milliseconds since the epoch (console only). */
  time?: number;
}

/** `browser.navigate()`. */
export interface NavigateResult {
  /** The final URL after redirects. */
  url: string;
  /** The main response's HTTP status, or null. */
  status: number | null;
  /** The page title. */
  title: string;
  /** Requests refused during this navigation. */
  blocked: BlockedRequest[];
}

/** `browser.content()`. */
export interface PageContent {
  /** Current URL. */
  url: string;
  /** Title. */
  title: string;
  /** The serialized document. */
  html: string;
  /** `document.body.innerText`. */
  text: string;
}

/** `browser.click()` and `browser.type()`. */
export interface PageAction {
  /** URL after the action. */
  url: string;
  /** Title after the action. */
  title: string;
  /** Whether the click started a navigation (click only). */
  navigated?: boolean;
}

/** `browser.console()`: what the page reported since the previous call. */
export interface ConsoleEntries {
  /** Console messages. */
  messages: { type: string; text: string; time: number }[];
  /** Uncaught exceptions and unhandled rejections. */
  errors: { message: string; time: number }[];
  /** Requests the URL guard refused. */
  blocked: BlockedRequest[];
  /** Entries thrown away (over 1000 per list). */
  dropped: number;
}
