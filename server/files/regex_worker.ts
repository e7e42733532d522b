/**
 * The worker that runs a search's regular expression, so that a pattern that backtracks for
 * ever costs the searcher a `terminate()`, not the server its event loop. It answers each batch
 * of lines with the `[line index, column]` of every line that matches.
 *
 * @module
 */

/// <reference lib="deno.worker" />

/** One batch of lines to match. */
export interface RegexJob {
  /** The regular expression's source. */
  pattern: string;
  /** Its flags. */
  flags: string;
  /** The lines. */
  lines: string[];
}

let cached: { key: string; re: RegExp } | undefined;

self.onmessage = (e: MessageEvent<RegexJob>) => {
  const { pattern, flags, lines } = e.data;
  const key = `${flags}/${pattern}`;
  if (cached?.key !== key) cached = { key, re: new RegExp(pattern, flags) };
  const hits: [number, number][] = [];
  for (let i = 0; i < lines.length; i++) {
    const at = lines[i].search(cached.re);
    if (at !== -1) hits.push([i, at]);
  }
  self.postMessage(hits);
};
