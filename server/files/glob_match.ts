/**
 * Glob matching for search patterns without regular expressions: a pattern is a list of tokens
 * matched against the text by dynamic programming over positions, O(text × pattern) whatever
 * the pattern, so `*a*a*a*a*b` cannot make the server backtrack for ever.
 *
 * `*` any run within one component, `?` one character other than `/`, `**` any run, `**\/` zero
 * or more whole components, `[abc]` / `[a-z]` / `[!abc]` classes; everything else literal.
 *
 * @module
 */

type Token =
  | { kind: "char"; c: string }
  | { kind: "one" }
  | { kind: "star" }
  | { kind: "globstar" }
  | { kind: "components" }
  | { kind: "class"; negate: boolean; test: (c: string) => boolean };

function parseClass(body: string, fold: (s: string) => string): (c: string) => boolean {
  const singles = new Set<string>();
  const ranges: [string, string][] = [];
  const chars = [...body];
  for (let i = 0; i < chars.length; i++) {
    if (chars[i + 1] === "-" && i + 2 < chars.length) {
      ranges.push([fold(chars[i]), fold(chars[i + 2])]);
      i += 2;
    } else singles.add(fold(chars[i]));
  }
  return (c) => singles.has(c) || ranges.some(([a, b]) => c >= a && c <= b);
}

function tokenize(glob: string, fold: (s: string) => string): Token[] {
  const out: Token[] = [];
  const chars = [...glob];
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i];
    if (ch === "*") {
      let j = i;
      while (chars[j + 1] === "*") j++;
      if (j > i && chars[j + 1] === "/") {
        out.push({ kind: "components" });
        i = j + 1;
      } else {
        out.push({ kind: j > i ? "globstar" : "star" });
        i = j;
      }
    } else if (ch === "?") out.push({ kind: "one" });
    else if (ch === "[") {
      const close = chars.indexOf("]", i + 2);
      if (close === -1) out.push({ kind: "char", c: "[" });
      else {
        let body = chars.slice(i + 1, close).join("");
        const negate = body.startsWith("!") || body.startsWith("^");
        if (negate) body = body.slice(1);
        out.push({ kind: "class", negate, test: parseClass(body, fold) });
        i = close;
      }
    } else out.push({ kind: "char", c: fold(ch) });
  }
  return out;
}

/**
 * Compile a glob into a matcher of whole strings.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { compileGlob } from "./glob_match.ts";
 * assert.equal(compileGlob("*.[jt]s", true)("main.ts"), true);
 * assert.equal(compileGlob("src/**\/*.ts", true)("src/a/b/c.ts"), true);
 * assert.equal(compileGlob("*.ts", true)("MAIN.TS"), false);
 * assert.equal(compileGlob("*.ts", false)("MAIN.TS"), true);
 * ```
 */
export function compileGlob(glob: string, caseSensitive: boolean): (text: string) => boolean {
  const fold = caseSensitive ? (s: string) => s : (s: string) => s.toLowerCase();
  const tokens = tokenize(glob, fold);
  return (input) => {
    const text = [...fold(input)];
    const n = text.length;
    let cur = new Uint8Array(n + 1);
    cur[0] = 1;
    for (const t of tokens) {
      const next = new Uint8Array(n + 1);
      let any = false;
      switch (t.kind) {
        case "star": {
          let run = false;
          for (let j = 0; j <= n; j++) {
            if (cur[j]) run = true;
            if (run) next[j] = 1;
            if (j < n && text[j] === "/") run = false;
          }
          break;
        }
        case "globstar": {
          let run = false;
          for (let j = 0; j <= n; j++) {
            if (cur[j]) run = true;
            if (run) next[j] = 1;
          }
          break;
        }
        case "components": {
          let seen = false;
          for (let j = 0; j <= n; j++) {
            if (j > 0 && cur[j - 1]) seen = true;
            if (cur[j] || (seen && text[j - 1] === "/")) next[j] = 1;
          }
          break;
        }
        default:
          for (let i = 0; i < n; i++) {
            if (!cur[i]) continue;
            const c = text[i];
            const ok = t.kind === "char"
              ? c === t.c
              : t.kind === "one"
              ? c !== "/"
              : c !== "/" && t.test(c) !== t.negate;
            if (ok) next[i + 1] = 1;
          }
      }
      for (let j = 0; j <= n && !any; j++) any = next[j] === 1;
      if (!any) return false;
      cur = next;
    }
    return cur[n] === 1;
  };
}
