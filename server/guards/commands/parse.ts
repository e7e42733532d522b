/**
 * From tokens to the simple commands of a bash string: the pieces between `;`, `&&`, `||`, `|`,
 * `&`, newlines and parentheses, with reserved words (`if`, `for`, `case`, `[[`…) and
 * redirections taken out, plus every nested command source and every function the string
 * defines. Only what the command guard needs; a string whose structure is unclear is a
 * {@linkcode ShellSyntaxError}.
 *
 * @module
 */

import { REDIRECTIONS, ShellSyntaxError, type Token, tokenize, type Word } from "./lexer.ts";

/** The parts of a bash string the command guard checks. */
export interface ParsedScript {
  /** Each simple command's words (assignments first, then the program and its arguments). */
  commands: Word[][];
  /** Sources of nested commands, to check the same way. */
  nested: string[];
  /** Names of the functions the string defines. */
  functions: Set<string>;
  /** Names assigned outside simple commands (`for NAME in`, `${NAME:=…}`). */
  assigns: string[];
}

const OPENERS = new Set(["if", "then", "else", "elif", "do", "while", "until", "{", "!", "time"]);
const CLOSERS = new Set(["fi", "done", "}"]);
const SEPARATORS = new Set([";", "\n", "&", "&&", "||", "|", "|&"]);
const CASE_ENDS = new Set([";;", ";&", ";;&"]);

type Mode =
  | "command"
  | "dbracket"
  | "for-name"
  | "for-in"
  | "for-words"
  | "case-word"
  | "case-in"
  | "case-pattern";

function reserved(w: Word, names: ReadonlySet<string> | string): boolean {
  if (w.quoted || w.dynamic) return false;
  return typeof names === "string" ? w.value === names : names.has(w.value);
}

/**
 * Parse a bash string into the parts the command guard checks.
 *
 * @example Commands nested in substitutions are found
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseScript } from "./parse.ts";
 * assert.deepEqual(parseScript("if true; then echo $(rm -f x); fi").nested, ["rm -f x"]);
 * ```
 */
export function parseScript(source: string): ParsedScript {
  const tokens = tokenize(source);
  const out: ParsedScript = { commands: [], nested: [], functions: new Set(), assigns: [] };
  const modes: Mode[] = ["command"];
  let depth = 0;
  let current: Word[] = [];

  const collect = (w: Word) => {
    out.nested.push(...w.nested);
    out.assigns.push(...w.assigns);
  };
  const finish = () => {
    if (current.length > 0) out.commands.push(current);
    current = [];
  };
  const mode = () => modes[modes.length - 1];
  const setMode = (m: Mode) => (modes[modes.length - 1] = m);

  for (let i = 0; i < tokens.length; i++) {
    const t: Token = tokens[i];
    const m = mode();
    if (t.kind === "arith") {
      out.nested.push(...t.nested);
      if (m === "for-name") setMode("for-words");
      continue;
    }
    if (m === "dbracket") {
      if (t.kind === "word") {
        if (reserved(t.word, "]]")) modes.pop();
        else collect(t.word);
      }
      continue;
    }
    if (t.kind === "op") {
      if (REDIRECTIONS.has(t.op)) {
        const target = tokens[i + 1];
        if (target?.kind !== "word") throw new ShellSyntaxError(`${t.op} without a target`);
        collect(target.word);
        i++;
        continue;
      }
      if (m === "case-pattern") {
        if (t.op === ")") modes.push("command");
        else if (t.op !== "|" && t.op !== "(" && t.op !== "\n") {
          throw new ShellSyntaxError(`unexpected ${t.op} in a case pattern`);
        }
        continue;
      }
      if (m === "case-word" || m === "case-in") {
        if (t.op === "\n") continue;
        throw new ShellSyntaxError("case without in");
      }
      if (m === "for-name" || m === "for-in" || m === "for-words") {
        if (t.op === ";" || t.op === "\n") modes.pop();
        else throw new ShellSyntaxError(`unexpected ${t.op} in for`);
        continue;
      }
      if (CASE_ENDS.has(t.op)) {
        finish();
        if (modes.length < 2 || modes[modes.length - 2] !== "case-pattern") {
          throw new ShellSyntaxError(`${t.op} outside a case`);
        }
        modes.pop();
        continue;
      }
      if (SEPARATORS.has(t.op)) {
        finish();
        continue;
      }
      if (t.op === "(") {
        const next = tokens[i + 1];
        if (current.length === 1 && next?.kind === "op" && next.op === ")") {
          out.functions.add(current[0].value);
          current = [];
          i++;
          continue;
        }
        if (current.length > 0) throw new ShellSyntaxError("unexpected (");
        depth++;
        continue;
      }
      if (t.op === ")") {
        finish();
        if (depth === 0) throw new ShellSyntaxError("unexpected )");
        depth--;
        continue;
      }
      throw new ShellSyntaxError(`unexpected ${JSON.stringify(t.op)}`);
    }
    const w = t.word;
    if (m === "for-name") {
      out.assigns.push(w.value);
      setMode("for-in");
      continue;
    }
    if (m === "for-in") {
      if (reserved(w, "in")) setMode("for-words");
      else if (reserved(w, "do")) modes.pop();
      else throw new ShellSyntaxError("for without in or do");
      continue;
    }
    if (m === "for-words") {
      collect(w);
      continue;
    }
    if (m === "case-word") {
      collect(w);
      setMode("case-in");
      continue;
    }
    if (m === "case-in") {
      if (!reserved(w, "in")) throw new ShellSyntaxError("case without in");
      setMode("case-pattern");
      continue;
    }
    if (m === "case-pattern") {
      if (reserved(w, "esac")) modes.pop();
      else collect(w);
      continue;
    }
    if (current.length === 0) {
      if (reserved(w, OPENERS)) {
        if (w.value === "time" && tokens[i + 1]?.kind === "word") {
          const next = (tokens[i + 1] as { word: Word }).word;
          if (!next.quoted && next.value === "-p") i++;
        }
        continue;
      }
      if (reserved(w, CLOSERS)) continue;
      if (reserved(w, "esac")) {
        if (modes.length < 2 || modes[modes.length - 2] !== "case-pattern") {
          throw new ShellSyntaxError("esac outside a case");
        }
        modes.pop();
        modes.pop();
        continue;
      }
      if (reserved(w, "for") || reserved(w, "select")) {
        modes.push("for-name");
        continue;
      }
      if (reserved(w, "case")) {
        modes.push("case-word");
        continue;
      }
      if (reserved(w, "[[")) {
        modes.push("dbracket");
        continue;
      }
      if (reserved(w, "function")) {
        const name = tokens[i + 1];
        if (name?.kind !== "word") throw new ShellSyntaxError("function without a name");
        out.functions.add(name.word.value);
        i++;
        const open = tokens[i + 1];
        const close = tokens[i + 2];
        if (open?.kind === "op" && open.op === "(" && close?.kind === "op" && close.op === ")") {
          i += 2;
        }
        continue;
      }
    }
    collect(w);
    current.push(w);
  }
  finish();
  // Leftover `for`/`case` modes or parentheses mean the string is cut short.
  if (depth !== 0) throw new ShellSyntaxError("unbalanced parentheses");
  if (modes.length !== 1) throw new ShellSyntaxError("unterminated case, for or [[");
  return out;
}
