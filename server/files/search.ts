/**
 * Searching a tree by name glob and by content, bounded in results, depth, file size and time.
 * Links are never followed (a link is matched by its name only), so a search cannot wander out
 * of the tree it was given.
 *
 * @module
 */

import { basename, join } from "node:path";
import { compileGlob } from "./glob_match.ts";
import { openWalked, type WalkEntry, walkTree } from "./tree_walk.ts";

/** What to look for, and the bounds. */
export interface SearchQuery {
  /** Glob over names (or, with a `/`, over paths relative to the root of the search). */
  pattern?: string;
  /** Text to find in files. */
  content?: string;
  /** `content` is a regular expression. */
  regex: boolean;
  /** Match case. */
  caseSensitive: boolean;
  /** Stop after this many matches. */
  maxResults: number;
  /** Do not descend deeper than this. */
  maxDepth: number;
  /** Stop after this many milliseconds. */
  timeoutMs: number;
  /** Skip larger files in a content search. */
  maxFileBytes: number;
  /** Include names starting with a dot. */
  includeHidden: boolean;
}

/** One match. */
export interface SearchMatch {
  /** Absolute path, as asked. */
  path: string;
  /** Base name. */
  name: string;
  /** `file` or `directory` (a link is a `file`). */
  type: "file" | "directory";
  /** Bytes. */
  size: number;
  /** For a content match: 1-based line. */
  line?: number;
  /** For a content match: 1-based column (UTF-16 units). */
  column?: number;
  /** For a content match: the line, cut to 500 characters. */
  text?: string;
}

/** The outcome of a search. */
export interface SearchResult {
  /** Matches, in walk order (depth first, names sorted). */
  matches: SearchMatch[];
  /** `maxResults` was reached. */
  truncated: boolean;
  /** `timeoutMs` was reached. */
  timed_out: boolean;
  /** Files whose content was read. */
  files_scanned: number;
}

/**
 * A regular expression run in a worker with a deadline: a pattern that backtracks for ever is
 * stopped by terminating the worker.
 */
class RegexInWorker {
  #worker: Worker | undefined;
  readonly #pattern: string;
  readonly #flags: string;

  constructor(pattern: string, flags: string) {
    this.#pattern = pattern;
    this.#flags = flags;
  }

  /** The `[line, column]` of every matching line, or null when the deadline passed first. */
  match(lines: string[], deadline: number): Promise<[number, number][] | null> {
    this.#worker ??= new Worker(new URL("./regex_worker.ts", import.meta.url).href, {
      type: "module",
    });
    const worker = this.#worker;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.close();
        resolve(null);
      }, Math.max(0, deadline - Date.now()));
      worker.onmessage = (e: MessageEvent<[number, number][]>) => {
        clearTimeout(timer);
        resolve(e.data);
      };
      worker.onerror = (e) => {
        e.preventDefault();
        clearTimeout(timer);
        this.close();
        resolve([]);
      };
      worker.postMessage({ pattern: this.#pattern, flags: this.#flags, lines });
    });
  }

  close(): void {
    this.#worker?.terminate();
    this.#worker = undefined;
  }
}

function isBinary(bytes: Uint8Array): boolean {
  return bytes.subarray(0, 8192).includes(0);
}

/** At most `max + 1` bytes of a file, so an oversized one is noticed without reading it all. */
async function readUpTo(file: Deno.FsFile, max: number): Promise<Uint8Array | null> {
  const buf = new Uint8Array(Math.min(max + 1, 1024 * 1024));
  let out = buf;
  let n = 0;
  while (true) {
    if (n === out.length) {
      if (out.length > max) return null;
      const bigger = new Uint8Array(Math.min(out.length * 2, max + 1));
      bigger.set(out);
      out = bigger;
    }
    const got = await file.read(out.subarray(n));
    if (got === null) return out.subarray(0, n);
    n += got;
    if (n > max) return null;
  }
}

/**
 * Search below `real` (shown to the client as `shown`). `hide` leaves out an entry (and, for a
 * directory, everything below it).
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { searchTree } from "./search.ts";
 * const dir = await Deno.realPath(await Deno.makeTempDir());
 * await Deno.writeTextFile(`${dir}/a.ts`, "const answer = 42;");
 * const query = { pattern: "*.ts", content: "answer", regex: false, caseSensitive: true,
 *   maxResults: 10, maxDepth: 8, timeoutMs: 5000, maxFileBytes: 1 << 20, includeHidden: false };
 * const r = await searchTree(dir, "/workspace", query, () => false, true);
 * assert.equal(r.matches[0].path, "/workspace/a.ts");
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function searchTree(
  real: string,
  shown: string,
  query: SearchQuery,
  hide: (shown: string, real: string) => boolean,
  noSymlinks: boolean,
  expect?: Deno.FileInfo | null,
): Promise<SearchResult> {
  const deadline = Date.now() + query.timeoutMs;
  const result: SearchResult = {
    matches: [],
    truncated: false,
    timed_out: false,
    files_scanned: 0,
  };
  const nameMatches = query.pattern === undefined
    ? undefined
    : compileGlob(query.pattern, query.caseSensitive);
  const byPath = query.pattern?.includes("/") ?? false;
  let contentRe: RegexInWorker | undefined;
  let needle: string | undefined;
  if (query.content !== undefined) {
    if (query.regex) contentRe = new RegexInWorker(query.content, query.caseSensitive ? "" : "i");
    else needle = query.caseSensitive ? query.content : query.content.toLowerCase();
  }
  const stop = () => {
    if (result.matches.length >= query.maxResults) result.truncated = true;
    else if (Date.now() > deadline) result.timed_out = true;
    return result.truncated || result.timed_out;
  };
  const decoder = new TextDecoder();

  async function scan(entry: WalkEntry, match: SearchMatch) {
    if (match.size > query.maxFileBytes) return;
    // A file with several names may be one outside the tree (see `regular_file.ts`).
    if (entry.stat.nlink > 1) return;
    const file = await openWalked(entry);
    if (!file) return;
    let bytes: Uint8Array | null;
    try {
      bytes = await readUpTo(file, query.maxFileBytes);
    } catch {
      return;
    } finally {
      file.close();
    }
    if (bytes === null) return;
    result.files_scanned++;
    if (isBinary(bytes)) return;
    const lines = decoder.decode(bytes).split("\n").map((l) =>
      l.endsWith("\r") ? l.slice(0, -1) : l
    );
    const add = (i: number, at: number) =>
      result.matches.push({ ...match, line: i + 1, column: at + 1, text: lines[i].slice(0, 500) });
    if (contentRe) {
      const hits = await contentRe.match(lines, deadline);
      if (hits === null) {
        result.timed_out = true;
        return;
      }
      for (const [i, at] of hits) {
        add(i, at);
        if (result.matches.length >= query.maxResults) break;
      }
      stop();
      return;
    }
    for (let i = 0; i < lines.length; i++) {
      if (i % 1000 === 0 && stop()) return;
      const at = (query.caseSensitive ? lines[i] : lines[i].toLowerCase()).indexOf(needle!);
      if (at === -1) continue;
      add(i, at);
      if (stop()) return;
    }
  }

  const walk = walkTree(real, {
    expect,
    maxDepth: query.maxDepth,
    noSymlinks,
    include: (e) =>
      (query.includeHidden || !basename(e.rel).startsWith(".")) &&
      !hide(join(shown, e.rel), e.path),
  });
  try {
    for await (const entry of walk) {
      if (stop()) break;
      const name = basename(entry.rel);
      if (nameMatches && !nameMatches(byPath ? entry.rel : name)) continue;
      const match: SearchMatch = {
        path: join(shown, entry.rel),
        name,
        type: entry.stat.kind === "directory" ? "directory" : "file",
        size: entry.stat.size,
      };
      if (query.content === undefined) result.matches.push(match);
      else if (entry.stat.kind === "file") await scan(entry, match);
    }
  } finally {
    contentRe?.close();
  }
  if (result.matches.length > query.maxResults) result.matches.length = query.maxResults;
  return result;
}
