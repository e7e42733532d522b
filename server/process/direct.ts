/**
 * The fast path of shell strings: a string that is one simple command of plain words
 * (`ls -la src`, `python3 app.py`, `true`) runs the program directly instead of through
 * `bash -c`, which is what bash itself would end up doing (it execs the last simple command of a
 * `-c` string) minus starting bash. Anything else — operators, expansions, redirections,
 * assignments, reserved words, builtins without an identical program — goes to bash.
 *
 * @module
 */

import { join, resolve } from "node:path";
import { ShellSyntaxError, tokenize } from "../guards/commands/lexer.ts";
import { libcAvailable } from "../libc/index.ts";
import { isExecutableFile } from "../pty/executable.ts";

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
 * Whether `path` is an executable file; `undefined` when the server may not look. Asked of the
 * kernel through libc where it can be (no Deno permission check, no stat object, no error
 * object for each directory of `PATH` that lacks the program), else through `Deno.statSync`.
 */
function executable(path: string): boolean | undefined {
  if (libcAvailable()) return isExecutableFile(path);
  try {
    const st = Deno.statSync(path);
    return st.isFile && st.mode !== null && (st.mode & 0o111) !== 0;
  } catch (e) {
    // The narrowed server may not read every PATH directory (a pyenv under /root, say).
    return e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory
      ? false
      : undefined;
  }
}

/**
 * Where bash would find `name` on `PATH` (relative to `cwd` for a name with a slash): the path,
 * `null` when it is nowhere, `undefined` when a directory the server may not read comes first.
 *
 * @example
 * ```ts ignore
 * locateProgram("ls", "/tmp", "/usr/bin:/bin"); // "/usr/bin/ls"
 * ```
 */
export function locateProgram(
  name: string,
  cwd: string,
  path: string | undefined,
): string | null | undefined {
  if (name.includes("/")) {
    const ok = executable(resolve(cwd, name));
    return ok === undefined ? undefined : ok ? name : null;
  }
  for (const dir of (path ?? "").split(":")) {
    if (dir === "") continue;
    const candidate = join(dir, name);
    const ok = executable(candidate);
    if (ok === undefined) return undefined;
    if (ok) return candidate;
  }
  return null;
}

/**
 * Check that the program of an exec-form argv exists, as `execvp` would find it; throws
 * `Deno.errors.NotFound` when it is surely nowhere (so the caller can answer `process_invalid`
 * rather than a run that failed inside the `setsid` wrapper). When the server may not look, the
 * run goes ahead and `setsid` reports a missing program (exit 1, on stderr).
 */
export function resolveProgram(name: string, cwd: string, path: string | undefined): void {
  if (locateProgram(name, cwd, path) === null) throw new Deno.errors.NotFound(`${name} not found`);
}

/**
 * The argv to run `cmd` directly, or `null` when it needs bash.
 *
 * @example
 * ```ts ignore
 * directArgv("ls -la 'my dir'", "/workspace", env); // ["/usr/bin/ls", "-la", "my dir"]
 * directArgv("ls > out", "/workspace", env); // null
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
