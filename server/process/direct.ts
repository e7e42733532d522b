/**
 * The fast path of shell strings: a string that is one simple command of plain words
 * (`ls -la src`, `python3 app.py`, `true`) runs the program directly instead of through
 * `bash -c`, which is what bash itself would end up doing (it execs the last simple command of a
 * `-c` string) minus starting bash. Anything else — operators, expansions, redirections,
 * assignments, reserved words, builtins without an identical program — goes to bash.
 *
 * @module
 */

import { ShellSyntaxError, tokenize } from "../guards/commands/lexer.ts";
import { locateProgram } from "./locate_program.ts";

/**
 * Bash builtins and reserved words that need bash. Builtins left out (`true`, `false`, `echo`,
 * `printf`, `test`, `[`) have a program of the same name that behaves the same for plain words.
 */
const NEEDS_BASH = new Set([
  ".",
  ":",
  "alias",
  "bg",
  "bind",
  "break",
  "builtin",
  "caller",
  "cd",
  "command",
  "compgen",
  "complete",
  "compopt",
  "continue",
  "declare",
  "dirs",
  "disown",
  "enable",
  "eval",
  "exec",
  "exit",
  "export",
  "fc",
  "fg",
  "getopts",
  "hash",
  "help",
  "history",
  "jobs",
  "kill",
  "let",
  "local",
  "logout",
  "mapfile",
  "popd",
  "pushd",
  "pwd",
  "read",
  "readarray",
  "readonly",
  "return",
  "set",
  "shift",
  "shopt",
  "source",
  "suspend",
  "times",
  "trap",
  "type",
  "typeset",
  "ulimit",
  "umask",
  "unalias",
  "unset",
  "wait",
  "if",
  "then",
  "else",
  "elif",
  "fi",
  "case",
  "esac",
  "for",
  "select",
  "while",
  "until",
  "do",
  "done",
  "in",
  "function",
  "time",
  "{",
  "}",
  "!",
  "[[",
  "]]",
  "coproc",
]);

/**
 * The argv to run `cmd` directly, or `null` when it needs bash.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { directArgv } from "./direct.ts";
 * const env = { PATH: "/usr/bin:/bin" };
 * assert.deepEqual(directArgv("ls -la 'my dir'", "/", env)?.slice(1), ["-la", "my dir"]);
 * assert.equal(directArgv("ls > out", "/", env), null); // needs a shell
 * ```
 */
export function directArgv(
  cmd: string,
  cwd: string,
  env: Record<string, string>,
): string[] | null {
  let tokens;
  try {
    tokens = tokenize(cmd);
  } catch (e) {
    if (e instanceof ShellSyntaxError) return null;
    throw e;
  }
  if (tokens.length === 0) return null;
  const words: string[] = [];
  for (const t of tokens) {
    if (t.kind !== "word" || t.word.dynamic) return null;
    words.push(t.word.value);
  }
  const first = tokens[0].kind === "word" ? tokens[0].word : null;
  if (!first || /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/.test(first.raw)) return null;
  // A quoted builtin name is still the builtin to bash; functions cannot exist in a fresh bash.
  if (NEEDS_BASH.has(words[0]) || words[0] === "") return null;
  // coreutils answers these where the builtins would print them.
  if (words.slice(1).some((w) => w === "--help" || w === "--version")) return null;
  const program = locateProgram(words[0], cwd, env.PATH);
  return typeof program === "string" ? [program, ...words.slice(1)] : null;
}
