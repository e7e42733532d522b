/**
 * The Landlock rules of a confinement, from the policy: what a process the server starts may
 * read, write and execute. Landlock only grants (a right on a directory holds for everything
 * beneath it), so a path to withhold inside a granted tree (the server's state directory, the
 * audit log, a `read_only` or literal `deny` path) is cut out by granting the tree's other
 * entries one by one instead of the tree: {@linkcode grantTree}. What the cut leaves:
 * the entries of such a split directory are listed as they were when the confinement was made
 * (a later one is reachable only through the rules of its parents: not at all), and a new file
 * cannot be made directly in a split directory.
 *
 * @module
 */

import { dirname, join } from "node:path";
import { exists, head as fileHead, listNames, pathKind } from "./fs_probe.ts";
import { FS, type PathRule } from "./landlock.ts";
import { PROGRAM_DIRS } from "../guards/commands/program_dirs.ts";

/** Read a file or list a directory. */
export const READ = FS.READ_FILE | FS.READ_DIR;
/** Change files and directories (no devices). */
export const WRITE = FS.WRITE_FILE | FS.REMOVE_DIR | FS.REMOVE_FILE | FS.MAKE_DIR | FS.MAKE_REG |
  FS.MAKE_SYM | FS.MAKE_SOCK | FS.MAKE_FIFO | FS.REFER | FS.TRUNCATE;

/** Read-only system trees: programs, libraries, `/proc` and `/sys`. */
const SYSTEM_TREES = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"];
/** The kernel's own tables, readable whole. `/proc` is handled apart: see `procRules`. */
const PSEUDO_TREES = ["/sys"];
/** Device nodes a program may open for reading and writing. */
const DEVICES = [
  "/dev/null",
  "/dev/zero",
  "/dev/full",
  "/dev/random",
  "/dev/urandom",
  "/dev/tty",
  "/dev/ptmx",
  "/dev/pts",
];
/** Entries of `/etc` that hold secrets or keys: never granted. */
const SECRET_ETC = new Set([
  "shadow",
  "shadow-",
  "gshadow",
  "gshadow-",
  "sudoers",
  "sudoers.d",
  "ssh",
  "ssl",
  "security",
  "credstore",
  "credstore.encrypted",
  "machine-id",
]);
/** Public parts of the withheld `/etc` entries. */
const PUBLIC_ETC = [
  "/etc/ssl/certs",
  "/etc/ssl/openssl.cnf",
  "/etc/ssh/ssh_config",
  "/etc/ssh/ssh_config.d",
];
const SHELLS = ["/bin/bash", "/bin/sh", "/usr/bin/bash", "/usr/bin/sh"];
const LOADERS = [
  "/lib64/ld-linux-x86-64.so.2",
  "/lib/ld-linux-aarch64.so.1",
  "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
  "/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1",
];

/** A path to withhold inside granted trees, and the rights taken away there. */
export interface Withheld {
  /** Absolute path. */
  path: string;
  /** Rights removed at and beneath `path`. */
  remove: bigint;
}

/** What one confinement allows. */
export interface ConfinementPlan {
  /** Trees readable and writable (`paths.allow`). */
  readWrite: readonly string[];
  /** Taken out of everything granted: secrets (all rights) and `read_only` trees (writes). */
  withheld: readonly Withheld[];
  /** Programs that may be executed; `null`: anything readable. */
  exec: readonly string[] | null;
  /** Extra read-only trees (Deno's own binary for `run_code`). */
  readOnly?: readonly string[];
  /** The confinement's own directory: read and write, granted even inside a withheld tree. */
  scratch?: string;
  /** `/proc` whole (`open`) or without its process directories (`closed`, the default). */
  proc?: "closed" | "open";
}

function isInside(path: string, tree: string): boolean {
  return path === tree || path.startsWith(tree === "/" ? "/" : tree + "/");
}

/**
 * Rules granting `rights` on `path`, minus what `withheld` takes away beneath it. A directory
 * with something withheld strictly inside is split: it keeps only `READ_DIR` (its names), and
 * each entry is granted on its own; symbolic links inside are not followed (their targets have
 * their own rules).
 */
export function grantTree(
  path: string,
  rights: bigint,
  withheld: readonly Withheld[],
  out: PathRule[],
  depth = 0,
): void {
  for (const w of withheld) if (w.path === path || isInside(path, w.path)) rights &= ~w.remove;
  if (rights === 0n) return;
  const inner = withheld.filter((w) => w.path !== path && isInside(w.path, path));
  if (inner.length === 0 || depth > 32) {
    out.push({ path, rights: String(rights) });
    return;
  }
  const names = listNames(path);
  if (names === null) return;
  if (rights & FS.READ_DIR) out.push({ path, rights: String(FS.READ_DIR) });
  for (const name of names) {
    const child = join(path, name);
    if (pathKind(child, false) === "link") continue;
    grantTree(child, rights, inner, out, depth + 1);
  }
}

/**
 * `/proc` without its process directories: every name may be listed, and the system-wide files
 * (`cpuinfo`, `meminfo`, `loadavg`, `sys/` …) read, but no file of any process, its own
 * included. The kernel's ptrace check alone does not keep a process from reading the
 * `environ`, `maps` or `cmdline` of an ancestor of the same user (the server, its launcher, the
 * shell that started it, all holding tokens in their environment): this does, for every
 * ancestor at once. The cost: `ps` and reads of `/proc/self/*` fail in a confined process
 * (`/dev/fd/N` and `/proc/self/fd/N` still open, as descriptors resolve to their files).
 */
function procRules(rules: PathRule[]): void {
  const names = listNames("/proc");
  if (names === null) return;
  rules.push({ path: "/proc", rights: String(FS.READ_DIR) });
  for (const name of names) {
    if (/^\d+$/.test(name)) continue;
    const path = join("/proc", name);
    if (pathKind(path, false) === "link") continue;
    rules.push({ path, rights: String(READ) });
  }
}

/** `program` and, for a `#!` script, its interpreter (and `env`'s program). */
function withInterpreter(program: string, out: Set<string>): void {
  if (!exists(program)) return;
  out.add(program);
  const head = fileHead(program);
  if (!head.startsWith("#!")) return;
  const [interpreter, arg] = head.slice(2).split("\n")[0].trim().split(/\s+/);
  if (!interpreter) return;
  out.add(interpreter);
  if (interpreter.endsWith("/env") && arg) {
    for (const d of PROGRAM_DIRS) if (exists(join(d, arg))) out.add(join(d, arg));
  }
}

/** The executables an `allow_commands` list admits, with the shells and the dynamic loader. */
export function allowedExecutables(commands: readonly string[], shells = true): string[] {
  const out = new Set<string>();
  for (const c of commands) {
    if (c.includes("/")) withInterpreter(c, out);
    else for (const d of PROGRAM_DIRS) withInterpreter(join(d, c), out);
  }
  if (shells) { for (const s of SHELLS) if (exists(s)) out.add(s); }
  for (const l of LOADERS) if (exists(l)) out.add(l);
  return [...out];
}

/**
 * Every rule of `plan`: the system read-only (and, without an exec list, executable), `/etc`
 * without its secrets, a few devices, `readWrite` with everything, all minus `withheld`, and
 * `exec` executable.
 */
export function planRules(plan: ConfinementPlan): PathRule[] {
  const rules: PathRule[] = [];
  const execAll = plan.exec === null ? FS.EXECUTE : 0n;
  for (const t of SYSTEM_TREES) if (exists(t)) grantTree(t, READ | execAll, plan.withheld, rules);
  for (const t of PSEUDO_TREES) if (exists(t)) rules.push({ path: t, rights: String(READ) });
  if (plan.proc === "open") rules.push({ path: "/proc", rights: String(READ) });
  else procRules(rules);
  for (const t of plan.readOnly ?? []) grantTree(t, READ | execAll, plan.withheld, rules);
  const etc = listNames("/etc");
  if (etc !== null) {
    rules.push({ path: "/etc", rights: String(FS.READ_DIR) });
    for (const name of etc) {
      if (!SECRET_ETC.has(name)) grantTree(join("/etc", name), READ, plan.withheld, rules);
    }
    for (const p of PUBLIC_ETC) if (exists(p)) grantTree(p, READ, plan.withheld, rules);
  }
  const device = READ | FS.WRITE_FILE | FS.TRUNCATE | FS.IOCTL_DEV;
  for (const d of DEVICES) if (exists(d)) rules.push({ path: d, rights: String(device) });
  if (exists("/dev/shm")) rules.push({ path: "/dev/shm", rights: String(READ | WRITE) });
  for (const t of plan.readWrite) {
    if (exists(t)) grantTree(t, READ | WRITE | execAll, plan.withheld, rules);
  }
  if (plan.scratch) rules.push({ path: plan.scratch, rights: String(READ | WRITE) });
  for (const x of plan.exec ?? []) {
    if (exists(x)) grantTree(x, READ | FS.EXECUTE, plan.withheld, rules);
  }
  return rules;
}

/** The directory of Deno's own binary, which `run_code` JavaScript runs. */
export function denoBinaryDir(): string {
  return dirname(Deno.execPath());
}
