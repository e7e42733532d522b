/**
 * Evaluating a caller's script in the page the way the DevTools console does: `Runtime.evaluate`
 * in REPL mode, so top-level `await` works and `let`/`const` may be declared again by a later
 * call, with the script's synchronous run cut off at the deadline. The value is turned into JSON
 * in the page, where it lives.
 *
 * @module
 */

import type { CDPSession, Page } from "puppeteer-core";

/** The message of a script stopped at its deadline. */
export const TERMINATED = "Execution was terminated";

/** The script threw, or did not parse. */
export class ScriptError extends Error {
  /** The page's message. */
  constructor(message: string) {
    super(message);
    this.name = "ScriptError";
  }
}

/**
 * JSON of a value, as the page makes it: `undefined` (and whatever JSON drops) is `null`, a
 * BigInt its decimal text. Runs in the page, so it must not close over anything.
 */
function toJsonText(this: unknown): string {
  return JSON.stringify(this, (_k, v) => typeof v === "bigint" ? v.toString() : v) ?? "null";
}

/** A primitive the protocol returned by value, as JSON text (NaN and ±Infinity are `null`). */
function primitiveJson(result: { type: string; value?: unknown; unserializableValue?: string }) {
  if (result.type === "bigint") return JSON.stringify(result.unserializableValue!.slice(0, -1));
  if (result.unserializableValue === "-0") return "0";
  if (result.unserializableValue !== undefined) return "null";
  if (result.value === undefined) return "null";
  return JSON.stringify(result.value) ?? "null";
}

interface RemoteObject {
  type: string;
  subtype?: string;
  objectId?: string;
  value?: unknown;
  unserializableValue?: string;
  description?: string;
}

interface ExceptionDetails {
  text: string;
  exception?: RemoteObject;
}

function failure(details: ExceptionDetails): ScriptError {
  const description = details.exception?.description ?? details.exception?.value;
  const text = description !== undefined ? String(description) : details.text;
  return new ScriptError(text.split("\n")[0]);
}

const sessions = new WeakMap<Page, Promise<CDPSession>>();

/** A protocol session of the page's own, made once per page. */
function sessionOf(page: Page): Promise<CDPSession> {
  let s = sessions.get(page);
  if (!s) {
    s = page.createCDPSession();
    sessions.set(page, s);
  }
  return s;
}

/**
 * Evaluate `script` in the page's main frame and return its value as JSON text. Throws
 * {@linkcode ScriptError} when the script throws or does not parse.
 */
export async function evaluateScript(page: Page, script: string, timeoutMs: number) {
  const cdp = await sessionOf(page);
  const started = performance.now();
  const evaluated = await cdp.send("Runtime.evaluate", {
    expression: script,
    replMode: true,
    awaitPromise: true,
    returnByValue: false,
    userGesture: true,
    // Stops a script that never yields (`while (true) {}`) without losing the page.
    timeout: timeoutMs,
  }).catch((e: Error) => {
    // Chromium reports the stop either as an exception or as a bare "Internal error".
    if (performance.now() - started >= timeoutMs) throw new ScriptError(TERMINATED);
    throw e;
  }) as { result: RemoteObject; exceptionDetails?: ExceptionDetails };
  if (evaluated.exceptionDetails) throw failure(evaluated.exceptionDetails);
  let result = evaluated.result;
  if (result.subtype === "promise" && result.objectId) {
    // REPL mode awaits only a top-level `await`; a script whose value is a promise gets it
    // awaited too, as documented.
    const settled = await cdp.send("Runtime.awaitPromise", {
      promiseObjectId: result.objectId,
      returnByValue: false,
    }) as { result: RemoteObject; exceptionDetails?: ExceptionDetails };
    await cdp.send("Runtime.releaseObject", { objectId: result.objectId }).catch(() => {});
    if (settled.exceptionDetails) throw failure(settled.exceptionDetails);
    result = settled.result;
  }
  // JSON has no symbols or functions: like `JSON.stringify`, they are null.
  if (result.type === "symbol" || result.type === "function") return "null";
  if (!result.objectId) return primitiveJson(result);
  try {
    const serialized = await cdp.send("Runtime.callFunctionOn", {
      functionDeclaration: toJsonText.toString(),
      objectId: result.objectId,
      returnByValue: true,
    }) as { result: RemoteObject; exceptionDetails?: ExceptionDetails };
    if (serialized.exceptionDetails) throw failure(serialized.exceptionDetails);
    return String(serialized.result.value);
  } finally {
    await cdp.send("Runtime.releaseObject", { objectId: result.objectId }).catch(() => {});
  }
}
