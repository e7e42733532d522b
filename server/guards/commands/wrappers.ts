/**
 * Programs that run another program: `env`, `nohup`, `timeout`, `sudo`, `xargs`, shells with
 * `-c`… For each, where the wrapped program (or script) is in its arguments, so the command guard
 * checks it too. Options are read the way each tool reads them; an argument the guard cannot know
 * before the program is found (an expansion) makes the whole command unverifiable.
 *
 * @module
 */

import type { Word } from "./lexer.ts";

/** What a wrapper runs. */
export type Wrapped =
  /** The program at `index` of the arguments, with its own arguments after it. */
  | { kind: "program"; index: number; assignmentsBefore?: number }
  /** A bash string, to be parsed and checked like the outer one. */
  | { kind: "script"; source: string }
  /** Nothing (e.g. `command -v x`, `xargs` alone runs `echo`, `bash file.sh` runs a file). */
  | { kind: "none" }
  /** Cannot be verified. */
  | { kind: "refuse"; reason: string };

interface OptionSpec {
  /** Short options that take an argument. */
  shortArg?: string;
  /** Long options that take an argument (when not given as `--opt=value`). */
  longArg?: string[];
  /** Plain words between the options and the program (`timeout DURATION prog`). */
  positional?: number;
  /** Short or long options after which nothing is run. */
  noRun?: string[];
  /** Options that cannot be verified. */
  refuse?: string[];
  /** Whether options may follow a `+` (bash's `+o`). */
  plus?: boolean;
}

const unverifiable = (w: Word): Wrapped => ({
  kind: "refuse",
  reason: `argument ${w.raw} is only known at run time`,
});

/** Skip options per `spec`; returns the index after them, or a verdict. */
function skipOptions(
  args: Word[],
  spec: OptionSpec,
  from = 0,
): { index: number; seen: Set<string> } | Wrapped {
  const seen = new Set<string>();
  let j = from;
  while (j < args.length) {
    const w = args[j];
    if (w.dynamic) return unverifiable(w);
    const v = w.value;
    if (v === "--") {
      j++;
      break;
    }
    if (v.startsWith("--")) {
      const name = v.split("=")[0];
      seen.add(name);
      if (spec.refuse?.includes(name)) return { kind: "refuse", reason: `option ${name}` };
      j += !v.includes("=") && spec.longArg?.includes(name) ? 2 : 1;
      continue;
    }
    if ((v.startsWith("-") || (spec.plus && v.startsWith("+"))) && v.length > 1) {
      let takesNext = false;
      for (let k = 1; k < v.length; k++) {
        const opt = `-${v[k]}`;
        seen.add(opt);
        if (spec.refuse?.includes(opt)) return { kind: "refuse", reason: `option ${opt}` };
        if (spec.shortArg?.includes(v[k])) {
          takesNext = k === v.length - 1;
          break;
        }
      }
      j += takesNext ? 2 : 1;
      continue;
    }
    break;
  }
  for (let p = 0; p < (spec.positional ?? 0); p++) {
    if (j >= args.length) return { kind: "none" };
    if (args[j].dynamic) return unverifiable(args[j]);
    j++;
  }
  if (spec.noRun?.some((o) => seen.has(o))) return { kind: "none" };
  return { index: j, seen };
}

function programAfter(args: Word[], spec: OptionSpec): Wrapped {
  const r = skipOptions(args, spec);
  if ("kind" in r) return r;
  return r.index < args.length ? { kind: "program", index: r.index } : { kind: "none" };
}

function literal(w: Word | undefined): Wrapped | string {
  if (!w) return { kind: "none" };
  if (w.dynamic) return unverifiable(w);
  return w.value;
}

function shell(args: Word[]): Wrapped {
  const r = skipOptions(args, { shortArg: "oO", longArg: ["--rcfile", "--init-file"], plus: true });
  if ("kind" in r) return r;
  if (![...r.seen].some((o) => /^-[a-zA-Z]$/.test(o) && o === "-c")) return { kind: "none" };
  const script = literal(args[r.index]);
  return typeof script === "string" ? { kind: "script", source: script } : script;
}

function env(args: Word[]): Wrapped {
  const r = skipOptions(args, {
    shortArg: "uC",
    longArg: ["--unset", "--chdir"],
    refuse: ["-S", "--split-string", "--default-signal", "--ignore-signal", "--block-signal"],
  });
  if ("kind" in r) return r;
  let j = r.index;
  const start = j;
  while (j < args.length && !args[j].dynamic && /^[A-Za-z_][A-Za-z0-9_]*=/.test(args[j].value)) {
    j++;
  }
  if (j < args.length && args[j].dynamic) return unverifiable(args[j]);
  return j < args.length
    ? { kind: "program", index: j, assignmentsBefore: j - start }
    : { kind: "none" };
}

function flock(args: Word[]): Wrapped {
  const r = skipOptions(args, { shortArg: "wEc", longArg: ["--timeout", "--conflict-exit-code"] });
  if ("kind" in r) return r;
  const c = args.findIndex((w) => !w.dynamic && (w.value === "-c" || w.value === "--command"));
  if (c >= 0) {
    const script = literal(args[c + 1]);
    return typeof script === "string" ? { kind: "script", source: script } : script;
  }
  return r.index + 1 < args.length ? { kind: "program", index: r.index + 1 } : { kind: "none" };
}

function su(args: Word[]): Wrapped {
  for (let j = 0; j < args.length; j++) {
    const w = args[j];
    if (w.dynamic) return unverifiable(w);
    if (w.value === "-c" || w.value === "--command") {
      const script = literal(args[j + 1]);
      return typeof script === "string" ? { kind: "script", source: script } : script;
    }
    if (w.value.startsWith("--command=")) {
      return { kind: "script", source: w.value.slice("--command=".length) };
    }
  }
  return { kind: "none" };
}

function watch(args: Word[]): Wrapped {
  const r = skipOptions(args, { shortArg: "nqd", longArg: ["--interval"] });
  if ("kind" in r) return r;
  const rest = args.slice(r.index);
  const dyn = rest.find((w) => w.dynamic);
  if (dyn) return unverifiable(dyn);
  return rest.length > 0
    ? { kind: "script", source: rest.map((w) => w.value).join(" ") }
    : { kind: "none" };
}

/** Wrappers by program name. */
export const WRAPPERS: Readonly<Record<string, (args: Word[]) => Wrapped>> = {
  env,
  command: (a) => programAfter(a, { noRun: ["-v", "-V"] }),
  exec: (a) => programAfter(a, { shortArg: "a" }),
  builtin: (a) => programAfter(a, {}),
  nohup: (a) => programAfter(a, {}),
  setsid: (a) => programAfter(a, {}),
  time: (a) => programAfter(a, { shortArg: "fo", longArg: ["--format", "--output"] }),
  nice: (a) => programAfter(a, { shortArg: "n", longArg: ["--adjustment"] }),
  stdbuf: (a) => programAfter(a, { shortArg: "ioe", longArg: ["--input", "--output", "--error"] }),
  timeout: (a) =>
    programAfter(a, { shortArg: "sk", longArg: ["--signal", "--kill-after"], positional: 1 }),
  sudo: (a) =>
    programAfter(a, {
      shortArg: "ugChprtUDTR",
      longArg: ["--user", "--group", "--close-from", "--host", "--prompt", "--role", "--type"],
      noRun: ["-l", "-v", "-k", "-K", "-e", "-V", "--list", "--validate", "--edit"],
    }),
  doas: (a) => programAfter(a, { shortArg: "uC" }),
  xargs: (a) =>
    programAfter(a, {
      shortArg: "ILnPsdEa",
      longArg: ["--max-args", "--max-procs", "--max-chars", "--delimiter", "--arg-file"],
    }),
  ionice: (a) => programAfter(a, { shortArg: "cnt", noRun: ["-p", "-P", "-u"] }),
  taskset: (a) => programAfter(a, { positional: 1, noRun: ["-p", "--pid"] }),
  chrt: (a) => programAfter(a, { shortArg: "TPD", positional: 1, noRun: ["-p", "--pid"] }),
  flock,
  su,
  runuser: su,
  watch,
  sh: shell,
  bash: shell,
  dash: shell,
  zsh: shell,
  ksh: shell,
  mksh: shell,
  ash: shell,
  busybox: (a) => (a.length > 0 ? { kind: "program", index: 0 } : { kind: "none" }),
};

/** `find` actions that run a program: `-exec prog … ;`. */
export const FIND_EXEC_ACTIONS: ReadonlySet<string> = new Set([
  "-exec",
  "-execdir",
  "-ok",
  "-okdir",
]);
