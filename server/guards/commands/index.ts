/**
 * The command guard: `allow_commands` and `deny_commands` applied to every simple command of a
 * shell string (`shell`, `shell_stream`, `process_start`, `bash` code of `run_code`) and to the
 * program of an exec-form `argv`.
 *
 * Codes: `command_invalid` (400) for a shell string that is empty, not a string or has a NUL
 * byte, or, while rules are in force, cannot be parsed; `command_not_allowed` (403) for a simple
 * command the rules refuse or that cannot be verified (a program name known only at run time,
 * `alias`, `source`…). For `argv`: `process_invalid` (400) for an empty or malformed `argv`,
 * `process_denied` (403) for a program the rules refuse. What is parsed and how names match is
 * in `docs/server/process.md`.
 *
 * With neither list set (the default), strings are only checked for being well-formed input:
 * bash itself reports its syntax errors.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import type { CompiledPolicy } from "../../policy/compile.ts";
import { LOADER_VARIABLES, nameMatches, SHELL_CONTROL_VARIABLES } from "../env/index.ts";
import { ShellSyntaxError, type Word } from "./lexer.ts";
import { parseScript } from "./parse.ts";
import { PROGRAM_DIRS } from "./program_dirs.ts";
import { FIND_EXEC_ACTIONS, WRAPPERS } from "./wrappers.ts";

/** The rules the guard applies. */
export interface CommandRules {
  /** `allow_commands`: when set, only these programs (and harmless builtins) may run. */
  allow?: readonly string[];
  /** `deny_commands`. */
  deny: readonly string[];
  /** Variable names a string may not assign (`env.deny` and the shell-control variables). */
  denyAssign: readonly string[];
}

/** The rules of a compiled policy. */
export function commandRules(policy: CompiledPolicy): CommandRules {
  return {
    allow: policy.allowCommands,
    deny: policy.denyCommands,
    denyAssign: [...policy.env.deny, ...SHELL_CONTROL_VARIABLES, ...LOADER_VARIABLES],
  };
}

/** Whether any command rule is in force (only then are strings parsed). */
export function commandRulesActive(rules: CommandRules): boolean {
  return rules.allow !== undefined || rules.deny.length > 0;
}

/** Builtins that run no program; allowed with `allow_commands` unless denied. */
const HARMLESS_BUILTINS = new Set([
  "cd",
  "echo",
  "printf",
  "true",
  "false",
  ":",
  "pwd",
  "test",
  "[",
  "export",
  "unset",
  "set",
  "shift",
  "read",
  "wait",
  "local",
  "declare",
  "typeset",
  "readonly",
  "return",
  "exit",
  "break",
  "continue",
]);

/** Builtins that change what a name runs, or run a file: never verifiable. */
const UNVERIFIABLE_BUILTINS = new Set([
  "alias",
  "enable",
  "shopt",
  "coproc",
  "source",
  ".",
  "fc",
]);

/** Builtins whose plain-name arguments are variables they assign. */
const ASSIGNING_BUILTINS = new Set(["read", "mapfile", "readarray", "getopts", "printf"]);
const DECLARING_BUILTINS = new Set(["export", "declare", "typeset", "local", "readonly"]);
/** The declaring builtins whose `-n` makes a name reference (assignments then reach its target). */
const NAMEREF_BUILTINS = new Set(["declare", "typeset", "local"]);
/** Options of `read`, `mapfile` and `readarray` that take a value (not a variable name). */
const VALUE_OPTIONS: Readonly<Record<string, string>> = {
  read: "dinNptu",
  mapfile: "dnOsuc",
  readarray: "dnOsuc",
};

/** Nesting deeper than this (`bash -c "bash -c '…'"`…) is refused rather than followed. */
const MAX_DEPTH = 8;

class Refusal extends Error {}

function basename(p: string): string {
  const cut = p.replace(/\/+$/, "").lastIndexOf("/");
  return cut < 0 ? p : p.slice(cut + 1);
}

/** Whether `program` (as written) matches a list entry: by last component, or exactly for paths. */
function denyMatches(program: string, entry: string): boolean {
  return basename(program) === basename(entry);
}

function allowMatches(program: string, entry: string): boolean {
  if (entry.includes("/")) return program === entry;
  if (!program.includes("/")) return program === entry;
  return PROGRAM_DIRS.some((d) => program === `${d}/${entry}`);
}

const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?\+?=/;

class Checker {
  readonly #rules: CommandRules;

  constructor(rules: CommandRules) {
    this.#rules = rules;
  }

  checkAssignName(name: string): void {
    if (name.startsWith("!")) {
      throw new Refusal(`assigning through the indirect name \${${name}} cannot be verified`);
    }
    const hit = this.#rules.denyAssign.find((p) => nameMatches(name, p));
    if (hit !== undefined) throw new Refusal(`assigning ${name} is not allowed`);
  }

  /**
   * `export`, `declare`, `typeset`, `local`, `readonly`: every name they set must be known now
   * (`export "$N=…"`, `declare -x "$N"=…` name a variable only at run time), and no name
   * reference (`declare -n L=LD_PRELOAD`, or `declare -n L; L=LD_PRELOAD`) is made, since an
   * assignment to it reaches a name the string never spells.
   */
  checkDeclaring(name: string, args: Word[]): void {
    let options = true;
    for (const a of args) {
      if (options && !a.dynamic && a.value === "--") {
        options = false;
        continue;
      }
      if (options && /^[-+]/.test(a.raw)) {
        if (a.dynamic) throw new Refusal(`option ${a.raw} of ${name} is only known at run time`);
        if (NAMEREF_BUILTINS.has(name) && a.value.includes("n")) {
          throw new Refusal(`${name} ${a.value}: a name reference cannot be verified`);
        }
        continue;
      }
      options = false;
      const literal = ASSIGNMENT.exec(a.raw);
      if (literal) {
        this.checkAssignName(literal[1]);
        continue;
      }
      if (a.dynamic) throw new Refusal(`the name in ${a.raw} of ${name} is only known at run time`);
      this.checkAssignName(ASSIGNMENT.exec(a.value)?.[1] ?? a.value.replace(/\[.*$/, ""));
    }
  }

  /**
   * `read`, `mapfile`, `readarray`, `getopts` and `printf -v` assign the variables they are
   * given by name: each must be spelled in the string, never known only at run time
   * (`printf -v "$N"`, `read "$N"`); `mapfile -C` runs a command string of its own.
   */
  checkAssigning(name: string, args: Word[]): void {
    const named = (w: Word | undefined, what: string) => {
      if (w === undefined) return;
      if (w.dynamic) throw new Refusal(`${what} ${w.raw} of ${name} is only known at run time`);
      this.checkAssignName(w.value.replace(/\[.*$/, ""));
    };
    if (name === "printf") {
      for (let k = 0; k < args.length; k++) {
        const a = args[k];
        if (a.dynamic && /^["']?-/.test(a.raw)) {
          throw new Refusal(`option ${a.raw} of printf is only known at run time`);
        }
        if (a.dynamic || !a.value.startsWith("-") || a.value === "--") break;
        if (a.value === "-v") named(args[++k], "the variable");
        else if (a.value.startsWith("-v")) this.checkAssignName(a.value.slice(2));
      }
      return;
    }
    if (name === "getopts") {
      named(args[1], "the variable");
      return;
    }
    const takesValue = VALUE_OPTIONS[name] ?? "";
    let options = true;
    for (let k = 0; k < args.length; k++) {
      const a = args[k];
      if (options && !a.dynamic && a.value === "--") {
        options = false;
        continue;
      }
      if (options && /^["']?-/.test(a.raw)) {
        if (a.dynamic) throw new Refusal(`option ${a.raw} of ${name} is only known at run time`);
        const flags = a.value.slice(1);
        for (let f = 0; f < flags.length; f++) {
          const flag = flags[f];
          if (name !== "read" && flag === "C") {
            throw new Refusal(`${name} -C runs a command of its own and cannot be verified`);
          }
          if (flag === "a") {
            if (f + 1 < flags.length) this.checkAssignName(flags.slice(f + 1));
            else named(args[++k], "the array");
            break;
          }
          if (takesValue.includes(flag)) {
            if (f + 1 === flags.length) k++;
            break;
          }
        }
        continue;
      }
      options = false;
      named(a, "the variable");
    }
  }

  checkScript(source: string, depth: number): void {
    if (depth > MAX_DEPTH) throw new Refusal("commands nested too deeply to verify");
    const parsed = parseScript(source);
    for (const name of parsed.assigns) this.checkAssignName(name);
    for (const words of parsed.commands) this.checkSimple(words, parsed.functions, depth);
    for (const nested of parsed.nested) this.checkScript(nested, depth + 1);
  }

  checkSimple(words: Word[], functions: ReadonlySet<string>, depth: number): void {
    let i = 0;
    while (i < words.length && ASSIGNMENT.test(words[i].raw)) {
      this.checkAssignName(ASSIGNMENT.exec(words[i].raw)![1]);
      i++;
    }
    if (i < words.length) this.checkProgram(words.slice(i), functions, depth);
  }

  /** `words[0]` is the program, the rest its arguments. */
  checkProgram(words: Word[], functions: ReadonlySet<string>, depth: number): void {
    const w = words[0];
    if (w.dynamic) throw new Refusal(`the program ${w.raw} is only known at run time`);
    const program = w.value;
    if (program === "") throw new Refusal("an empty program name");
    const name = basename(program);
    const denied = this.#rules.deny.find((e) => denyMatches(program, e));
    if (denied !== undefined) throw new Refusal(`${program} is in deny_commands`);
    const allow = this.#rules.allow;
    if (allow !== undefined) {
      const ok = allow.some((e) => allowMatches(program, e)) ||
        (!program.includes("/") && (HARMLESS_BUILTINS.has(program) || functions.has(program)));
      if (!ok) throw new Refusal(`${program} is not in allow_commands`);
    }
    const args = words.slice(1);
    if (program.includes("/")) {
      // A path runs a file, never a builtin; only wrappers are looked through.
    } else if (UNVERIFIABLE_BUILTINS.has(name)) {
      throw new Refusal(`${name} changes what commands run and cannot be verified`);
    } else if (name === "hash" && args.length > 0) {
      throw new Refusal("hash with arguments changes what commands run");
    } else if (DECLARING_BUILTINS.has(name)) {
      this.checkDeclaring(name, args);
      return;
    } else if (ASSIGNING_BUILTINS.has(name)) {
      this.checkAssigning(name, args);
      return;
    } else if (name === "eval" || name === "trap") {
      const script = name === "eval" ? args : args.slice(0, 1);
      const dyn = script.find((a) => a.dynamic);
      if (dyn) throw new Refusal(`${name} of ${dyn.raw}, known only at run time`);
      if (script.length > 0 && script[0].value !== "-") {
        this.checkScript(script.map((a) => a.value).join(" "), depth + 1);
      }
      return;
    }
    if (name === "find") {
      for (let k = 0; k < args.length; k++) {
        if (!args[k].dynamic && FIND_EXEC_ACTIONS.has(args[k].value) && k + 1 < args.length) {
          let end = k + 1;
          while (
            end < args.length && !(!args[end].dynamic && [";", "+"].includes(args[end].value))
          ) {
            end++;
          }
          this.checkProgram(args.slice(k + 1, end), new Set(), depth);
          k = end;
        }
      }
      return;
    }
    const wrapper = WRAPPERS[name];
    if (!wrapper) return;
    const wrapped = wrapper(args);
    if (wrapped.kind === "refuse") {
      throw new Refusal(`cannot verify what ${name} runs: ${wrapped.reason}`);
    }
    if (wrapped.kind === "script") this.checkScript(wrapped.source, depth + 1);
    if (wrapped.kind === "program") {
      const assignments = args.slice(
        wrapped.index - (wrapped.assignmentsBefore ?? 0),
        wrapped.index,
      );
      for (const a of assignments) this.checkAssignName(ASSIGNMENT.exec(a.value)![1]);
      this.checkProgram(args.slice(wrapped.index), new Set(), depth + 1);
    }
  }
}

/** The verdict on a shell string or an argv. */
export type CommandVerdict =
  | { allowed: true }
  | {
    allowed: false;
    code: "command_invalid" | "command_not_allowed" | "process_invalid" | "process_denied";
    reason: string;
  };

/** Whether a value is a usable shell string; the reason when not. */
function shellStringProblem(cmd: unknown): string | null {
  if (typeof cmd !== "string") return "cmd must be a string";
  if (cmd.trim() === "") return "cmd is empty";
  if (cmd.includes("\0")) return "cmd contains a NUL byte";
  return null;
}

/**
 * Decide a shell string.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { decideShellCommand } from "./index.ts";
 * const rules = { deny: ["rm"], denyAssign: [] };
 * assert.equal(decideShellCommand(rules, "echo ok; /usr/bin/rm -rf x").allowed, false);
 * assert.equal(decideShellCommand(rules, "echo ok; ls -la").allowed, true);
 * ```
 */
export function decideShellCommand(rules: CommandRules, cmd: unknown): CommandVerdict {
  const problem = shellStringProblem(cmd);
  if (problem) return { allowed: false, code: "command_invalid", reason: problem };
  if (!commandRulesActive(rules)) return { allowed: true };
  try {
    new Checker(rules).checkScript(cmd as string, 0);
    return { allowed: true };
  } catch (e) {
    if (e instanceof ShellSyntaxError) {
      return {
        allowed: false,
        code: "command_invalid",
        reason: `Cannot parse the command to check it: ${e.message}`,
      };
    }
    if (e instanceof Refusal) {
      return {
        allowed: false,
        code: "command_not_allowed",
        reason: `Command refused: ${e.message}`,
      };
    }
    throw e;
  }
}

/**
 * Decide an exec-form argv (`["prog", "arg"…]`, no shell).
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { decideArgv } from "./index.ts";
 * const rules = { allow: ["python3"], deny: [], denyAssign: [] };
 * assert.equal(decideArgv(rules, ["python3", "-V"]).allowed, true);
 * assert.equal(decideArgv(rules, ["bash", "-c", "python3"]).allowed, false);
 * ```
 */
export function decideArgv(rules: CommandRules, argv: unknown): CommandVerdict {
  if (!Array.isArray(argv) || argv.length === 0) {
    return { allowed: false, code: "process_invalid", reason: "argv must be a non-empty array" };
  }
  for (const a of argv) {
    if (typeof a !== "string") {
      return { allowed: false, code: "process_invalid", reason: "argv items must be strings" };
    }
    if (a.includes("\0")) {
      return { allowed: false, code: "process_invalid", reason: "argv has a NUL byte" };
    }
  }
  if ((argv[0] as string).trim() === "") {
    return { allowed: false, code: "process_invalid", reason: "the program (argv[0]) is empty" };
  }
  if (!commandRulesActive(rules)) return { allowed: true };
  const words: Word[] = (argv as string[]).map((value) => ({
    raw: value,
    value,
    quoted: true,
    dynamic: false,
    nested: [],
    assigns: [],
  }));
  try {
    new Checker(rules).checkProgram(words, new Set(), 0);
    return { allowed: true };
  } catch (e) {
    if (e instanceof ShellSyntaxError || e instanceof Refusal) {
      return { allowed: false, code: "process_denied", reason: `Program refused: ${e.message}` };
    }
    throw e;
  }
}

function raise(verdict: CommandVerdict, param: string): void {
  if (!verdict.allowed) throw new ApiError(verdict.code, verdict.reason, { param });
}

/**
 * Throw the refusal of a shell string as an {@linkcode ApiError}.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { guardShellCommand } from "./index.ts";
 * const rules = { deny: ["rm"], denyAssign: [] };
 * assert.equal(guardShellCommand(rules, "ls -la"), "ls -la");
 * assert.throws(() => guardShellCommand(rules, "sudo rm -rf /"), { code: "command_not_allowed" });
 * ```
 */
export function guardShellCommand(rules: CommandRules, cmd: unknown, param = "cmd"): string {
  raise(decideShellCommand(rules, cmd), param);
  return cmd as string;
}

/**
 * Throw the refusal of an argv as an {@linkcode ApiError}.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { guardArgv } from "./index.ts";
 * const rules = { deny: ["rm"], denyAssign: [] };
 * assert.deepEqual(guardArgv(rules, ["ls", "-la"]), ["ls", "-la"]);
 * assert.throws(() => guardArgv(rules, ["/bin/rm", "-rf", "/"]), { code: "process_denied" });
 * ```
 */
export function guardArgv(rules: CommandRules, argv: unknown, param = "argv"): string[] {
  raise(decideArgv(rules, argv), param);
  return argv as string[];
}
