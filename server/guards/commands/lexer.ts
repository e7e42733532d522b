/**
 * A conservative lexer for bash command strings, for the command guard only: it never runs or
 * expands anything. It splits a string into words and operators the way bash does, removes quotes
 * to get a word's literal value, and collects the source text of every nested command
 * (`$( )`, backticks, `<( )`, `>( )`, here-documents with an unquoted delimiter) so the guard can
 * check those too. Anything it cannot read with certainty is a {@linkcode ShellSyntaxError}.
 *
 * @module
 */

/** A string the lexer cannot read safely: refused, never guessed at. */
export class ShellSyntaxError extends Error {
  /** Make one. */
  constructor(message: string) {
    super(message);
    this.name = "ShellSyntaxError";
  }
}

/** One word of a command string. */
export interface Word {
  /** The text as written. */
  raw: string;
  /** The value after quote removal; meaningful only when `dynamic` is false. */
  value: string;
  /** True when any part was quoted or escaped (such a word is never a reserved word). */
  quoted: boolean;
  /**
   * True when the value is only known at run time: parameter, command or arithmetic expansion,
   * an unquoted glob or brace expansion, `$'…'`.
   */
  dynamic: boolean;
  /** Sources of commands nested in the word (`$( )`, backticks, process substitution). */
  nested: string[];
  /** Names assigned by `${NAME=…}` / `${NAME:=…}` forms inside the word. */
  assigns: string[];
}

/** A token: a word, or an operator (`;`, `&&`, `|`, `(`, `>`, `((`…), or a newline. */
export type Token =
  | { kind: "word"; word: Word }
  | { kind: "op"; op: string }
  | { kind: "arith"; nested: string[]; source: string };

const METACHARS = new Set([" ", "\t", "\n", ";", "&", "|", "(", ")", "<", ">"]);

const OPERATORS = [
  ";;&",
  "<<<",
  "<<-",
  "&>>",
  "&&",
  "||",
  ";;",
  ";&",
  "|&",
  "<<",
  ">>",
  "<&",
  ">&",
  "<>",
  ">|",
  "&>",
  ";",
  "&",
  "|",
  "(",
  ")",
  "<",
  ">",
];

/** Operators after which the next word is a redirection target. */
export const REDIRECTIONS: ReadonlySet<string> = new Set([
  "<",
  ">",
  ">>",
  "<&",
  ">&",
  "<>",
  ">|",
  "&>",
  "&>>",
  "<<<",
  "<<",
  "<<-",
]);

interface PendingHeredoc {
  delimiter: string;
  stripTabs: boolean;
  expand: boolean;
  target: Word;
}

/**
 * Split a bash command string into tokens.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { tokenize } from "./lexer.ts";
 * const shown = tokenize("echo hi && rm -f x")
 *   .map((t) => t.kind === "word" ? t.word.value : t.kind === "op" ? t.op : "((");
 * assert.deepEqual(shown, ["echo", "hi", "&&", "rm", "-f", "x"]);
 * ```
 */
export function tokenize(source: string): Token[] {
  return new Lexer(source).run();
}

class Lexer {
  readonly #s: string;
  #i = 0;
  readonly #tokens: Token[] = [];
  #heredocs: PendingHeredoc[] = [];

  constructor(source: string) {
    this.#s = source;
  }

  run(): Token[] {
    const s = this.#s;
    while (this.#i < s.length) {
      const ch = s[this.#i];
      // A carriage return is no blank to bash: it is part of a word (`x\r#` is one word, not a
      // word and a comment), as it must be here, or the guard would skip what bash runs.
      if (ch === " " || ch === "\t") {
        this.#i++;
      } else if (ch === "\\" && s[this.#i + 1] === "\n") {
        this.#i += 2;
      } else if (ch === "#" && this.#atWordStart()) {
        while (this.#i < s.length && s[this.#i] !== "\n") this.#i++;
      } else if (ch === "\n") {
        this.#i++;
        this.#tokens.push({ kind: "op", op: "\n" });
        this.#readHeredocBodies();
      } else if (ch === "(" && s[this.#i + 1] === "(" && this.#atCommandStart()) {
        const start = this.#i + 2;
        const end = findClose(s, start, 2);
        const inner = s.slice(start, end - 1);
        this.#tokens.push({ kind: "arith", nested: scanNested(inner), source: inner });
        this.#i = end + 1;
      } else if ((ch === "<" || ch === ">") && s[this.#i + 1] === "(") {
        this.#readWordToken(); // process substitution: a word
      } else if (METACHARS.has(ch)) {
        const op = OPERATORS.find((o) => s.startsWith(o, this.#i))!;
        this.#i += op.length;
        this.#tokens.push({ kind: "op", op });
        if (op === "<<" || op === "<<-") this.#queueHeredoc(op === "<<-");
      } else {
        this.#readWordToken();
      }
    }
    if (this.#heredocs.length > 0) {
      throw new ShellSyntaxError("here-document without a body");
    }
    return this.#tokens;
  }

  #atWordStart(): boolean {
    const prev = this.#s[this.#i - 1];
    return prev === undefined || METACHARS.has(prev);
  }

  #atCommandStart(): boolean {
    const last = this.#tokens.at(-1);
    if (!last) return true;
    if (last.kind === "op") return !REDIRECTIONS.has(last.op) && last.op !== ")";
    if (last.kind === "word") {
      return !last.word.quoted && ["for", "do", "then", "else", "if", "while", "until", "{", "!"]
        .includes(last.word.value);
    }
    return false;
  }

  #readWordToken(): void {
    const s = this.#s;
    const start = this.#i;
    const word = readWord(s, start);
    // Every branch of the main loop must move forward; a word that read nothing is a bug.
    if (word.end === start) throw new ShellSyntaxError(`unexpected ${JSON.stringify(s[start])}`);
    this.#i = word.end;
    // `2>file`, `{fd}>file`: the digits or `{name}` before a redirection are a descriptor.
    const next = s[this.#i];
    if (
      (next === "<" || next === ">") && /^(\d+|\{[A-Za-z_][A-Za-z0-9_]*\})$/.test(word.word.raw)
    ) {
      return;
    }
    this.#tokens.push({ kind: "word", word: word.word });
  }

  #queueHeredoc(stripTabs: boolean): void {
    const s = this.#s;
    while (s[this.#i] === " " || s[this.#i] === "\t") this.#i++;
    if (this.#i >= s.length || METACHARS.has(s[this.#i])) {
      throw new ShellSyntaxError("here-document without a delimiter");
    }
    const { word, end } = readWord(s, this.#i);
    this.#i = end;
    if (word.nested.length > 0 || /[$`]/.test(word.raw.replace(/'[^']*'/g, ""))) {
      throw new ShellSyntaxError("here-document delimiter with an expansion");
    }
    const target: Word = { ...word, nested: [] };
    this.#tokens.push({ kind: "word", word: target });
    this.#heredocs.push({ delimiter: word.value, stripTabs, expand: !word.quoted, target });
  }

  #readHeredocBodies(): void {
    const s = this.#s;
    for (const doc of this.#heredocs) {
      const lines: string[] = [];
      let closed = false;
      while (this.#i < s.length) {
        let nl = s.indexOf("\n", this.#i);
        if (nl < 0) nl = s.length;
        let line = s.slice(this.#i, nl);
        this.#i = Math.min(nl + 1, s.length);
        if (doc.stripTabs) line = line.replace(/^\t+/, "");
        if (line === doc.delimiter) {
          closed = true;
          break;
        }
        lines.push(line);
      }
      if (!closed) throw new ShellSyntaxError(`here-document not closed by ${doc.delimiter}`);
      if (doc.expand) doc.target.nested.push(...scanNested(lines.join("\n"), true));
    }
    this.#heredocs = [];
  }
}

/** The index just past the `)` (or `))` when `depth` is 2) closing a construct opened before `from`. */
function findClose(s: string, from: number, depth: number): number {
  let d = depth;
  let i = from;
  while (i < s.length) {
    const ch = s[i];
    if (ch === "\\") {
      i += 2;
      continue;
    }
    if (ch === "'") {
      i = skipSingle(s, i + 1);
      continue;
    }
    if (ch === '"') {
      i = skipDouble(s, i + 1);
      continue;
    }
    if (ch === "`") {
      i = skipBacktick(s, i + 1);
      continue;
    }
    if (ch === "#" && (i === 0 || /[\s;&|(]/.test(s[i - 1]))) {
      while (i < s.length && s[i] !== "\n") i++;
      continue;
    }
    if (ch === "(") d++;
    if (ch === ")") {
      d--;
      if (d === 0) return i;
    }
    i++;
  }
  throw new ShellSyntaxError("unbalanced parentheses");
}

function skipSingle(s: string, from: number): number {
  const end = s.indexOf("'", from);
  if (end < 0) throw new ShellSyntaxError("unterminated single quote");
  return end + 1;
}

function skipDouble(s: string, from: number): number {
  let i = from;
  while (i < s.length) {
    const ch = s[i];
    if (ch === "\\") i += 2;
    else if (ch === '"') return i + 1;
    else if (ch === "`") i = skipBacktick(s, i + 1);
    else if (ch === "$" && s[i + 1] === "(") i = findClose(s, i + 2, 1) + 1;
    else if (ch === "$" && s[i + 1] === "{") i = findBrace(s, i + 2) + 1;
    else i++;
  }
  throw new ShellSyntaxError("unterminated double quote");
}

function skipBacktick(s: string, from: number): number {
  let i = from;
  while (i < s.length) {
    if (s[i] === "\\") i += 2;
    else if (s[i] === "`") return i + 1;
    else i++;
  }
  throw new ShellSyntaxError("unterminated backtick");
}

function findBrace(s: string, from: number): number {
  let i = from;
  let depth = 1;
  while (i < s.length) {
    const ch = s[i];
    if (ch === "\\") i += 2;
    else if (ch === "'") i = skipSingle(s, i + 1);
    else if (ch === '"') i = skipDouble(s, i + 1);
    else if (ch === "`") i = skipBacktick(s, i + 1);
    else if (ch === "$" && s[i + 1] === "(") i = findClose(s, i + 2, 1) + 1;
    else if (ch === "{") {
      depth++;
      i++;
    } else if (ch === "}") {
      depth--;
      if (depth === 0) return i;
      i++;
    } else i++;
  }
  throw new ShellSyntaxError("unterminated ${");
}

/** A backtick body as bash reads it: `\\`, `` \` `` and `\$` lose their backslash. */
function unescapeBacktick(body: string): string {
  return body.replace(/\\([\\`$])/g, "$1");
}

/**
 * The nested command sources in text that is not split into words (a here-document body, the
 * inside of `${ }` or of arithmetic): `$( )`, backticks, and, outside double quotes, `<( )`.
 */
export function scanNested(text: string, heredoc = false): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    if (ch === "\\") {
      i += 2;
    } else if (ch === "'" && !heredoc) {
      i = skipSingle(text, i + 1);
    } else if (ch === "`") {
      const end = skipBacktick(text, i + 1);
      out.push(unescapeBacktick(text.slice(i + 1, end - 1)));
      i = end;
    } else if (ch === "$" && text[i + 1] === "(") {
      const end = findClose(text, i + 2, 1);
      out.push(...commandOrArithmetic(text.slice(i + 2, end)));
      i = end + 1;
    } else if (ch === "$" && text[i + 1] === "{") {
      const end = findBrace(text, i + 2);
      out.push(...scanNested(text.slice(i + 2, end)));
      i = end + 1;
    } else {
      i++;
    }
  }
  return out;
}

/**
 * The body of `$( … )`: `$((…))` is arithmetic when the inner `(` closes at the very end (bash's
 * own rule); its text can still nest commands. Anything else is a command list.
 */
function commandOrArithmetic(body: string): string[] {
  if (body.startsWith("(") && body.endsWith(")")) {
    try {
      if (findClose(body, 1, 1) === body.length - 1) return scanNested(body.slice(1, -1));
    } catch {
      // not arithmetic; a command list
    }
  }
  return [body];
}

const PARAM_ASSIGN = /^([A-Za-z_][A-Za-z0-9_]*):?=/;
const INDIRECT_ASSIGN = /^!([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?:?=/;

/** Read one word starting at `start`; returns it and the index just past it. */
export function readWord(s: string, start: number): { word: Word; end: number } {
  let i = start;
  let value = "";
  let quoted = false;
  let dynamic = false;
  const nested: string[] = [];
  const assigns: string[] = [];
  let openBracket = false;
  const procSub = (at: number) => (s[at] === "<" || s[at] === ">") && s[at + 1] === "(";
  while (i < s.length && (!METACHARS.has(s[i]) || procSub(i))) {
    const ch = s[i];
    if (ch === "\\") {
      quoted = true;
      if (s[i + 1] === "\n") {
        i += 2;
        continue;
      }
      if (i + 1 >= s.length) throw new ShellSyntaxError("trailing backslash");
      value += s[i + 1];
      i += 2;
    } else if (ch === "'") {
      quoted = true;
      const end = skipSingle(s, i + 1);
      value += s.slice(i + 1, end - 1);
      i = end;
    } else if (ch === '"' || (ch === "$" && s[i + 1] === '"')) {
      quoted = true;
      const open = ch === "$" ? i + 2 : i + 1;
      const end = skipDouble(s, open);
      const body = s.slice(open, end - 1);
      const inner = scanDoubleQuoted(body);
      nested.push(...inner.nested);
      assigns.push(...inner.assigns);
      if (inner.dynamic) dynamic = true;
      value += inner.value;
      i = end;
    } else if (ch === "$" && s[i + 1] === "'") {
      // ANSI-C quoting: its value needs escape decoding, so it is treated as unknown.
      quoted = true;
      dynamic = true;
      let j = i + 2;
      while (j < s.length && s[j] !== "'") j += s[j] === "\\" ? 2 : 1;
      if (j >= s.length) throw new ShellSyntaxError("unterminated $'");
      i = j + 1;
    } else if (isExpansion(s, i)) {
      i = readExpansion(s, i, nested, assigns);
      dynamic = true;
    } else if ((ch === "<" || ch === ">") && s[i + 1] === "(") {
      const end = findClose(s, i + 2, 1);
      nested.push(s.slice(i + 2, end));
      dynamic = true;
      i = end + 1;
    } else {
      if (ch === "*" || ch === "?") dynamic = true;
      // `[` opens a glob only when a `]` closes it (`[` and `[[` alone are commands).
      if (ch === "[") openBracket = true;
      if (ch === "]" && openBracket) dynamic = true;
      if ((ch === "@" || ch === "!" || ch === "+") && s[i + 1] === "(") {
        throw new ShellSyntaxError("extended glob patterns are not supported");
      }
      value += ch;
      i++;
    }
  }
  if (!quoted && /\{[^{}]*(,|\.\.)[^{}]*\}/.test(value)) dynamic = true;
  if (!quoted && value.startsWith("~")) dynamic = true;
  return { word: { raw: s.slice(start, i), value, quoted, dynamic, nested, assigns }, end: i };
}

/** Whether an expansion starts at `i`: a backtick, `$(`, `${` or `$name`. */
function isExpansion(s: string, i: number): boolean {
  return s[i] === "`" || (s[i] === "$" && /[({A-Za-z0-9_@*#?$!-]/.test(s[i + 1] ?? ""));
}

/**
 * Read the expansion at `i` (see {@linkcode isExpansion}), adding the commands it nests and the
 * names it assigns; returns the index past it.
 */
function readExpansion(s: string, i: number, nested: string[], assigns: string[]): number {
  if (s[i] === "`") {
    const end = skipBacktick(s, i + 1);
    nested.push(unescapeBacktick(s.slice(i + 1, end - 1)));
    return end;
  }
  if (s[i + 1] === "(") {
    const end = findClose(s, i + 2, 1);
    nested.push(...commandOrArithmetic(s.slice(i + 2, end)));
    return end + 1;
  }
  if (s[i + 1] === "{") {
    const end = findBrace(s, i + 2);
    const body = s.slice(i + 2, end);
    nested.push(...scanNested(body));
    const m = PARAM_ASSIGN.exec(body);
    if (m) assigns.push(m[1]);
    // `${!N:=…}` assigns the variable whose name N holds: reported as `!N`, never verifiable.
    const indirect = INDIRECT_ASSIGN.exec(body);
    if (indirect) assigns.push(`!${indirect[1]}`);
    return end + 1;
  }
  let j = i + 2;
  while (j < s.length && /[A-Za-z0-9_]/.test(s[j])) j++;
  return j;
}

function scanDoubleQuoted(body: string): {
  value: string;
  dynamic: boolean;
  nested: string[];
  assigns: string[];
} {
  let value = "";
  let dynamic = false;
  const nested: string[] = [];
  const assigns: string[] = [];
  let i = 0;
  while (i < body.length) {
    const ch = body[i];
    if (ch === "\\") {
      const next = body[i + 1];
      if (next === "$" || next === "`" || next === '"' || next === "\\") value += next;
      else if (next !== "\n") value += ch + next;
      i += 2;
    } else if (isExpansion(body, i)) {
      i = readExpansion(body, i, nested, assigns);
      dynamic = true;
    } else {
      value += ch;
      i++;
    }
  }
  return { value, dynamic, nested, assigns };
}
