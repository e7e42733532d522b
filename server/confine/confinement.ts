/**
 * The confinements of a server: one confined spawner thread per identity and kind of process,
 * made on first use and ended with the server. Kinds:
 *
 * - `process`: what an identity runs (shells, background processes, terminals, `run_code`):
 *   reads and writes under `paths.allow` (never under `read_only` for writes, never the
 *   server's state directory or its secrets), reads the system, and executes anything readable,
 *   or under `allow_commands` only those programs, the shells and the dynamic loader.
 * - `git`: the server's own git runs for the `git` endpoints: reads `paths.allow`, writes only its
 *   scratch directory (its `HOME`), and executes git alone (no shell: a configuration that names
 *   a program cannot start it).
 * - `system`: the helper programs of the `system` group (`df`, `grep`, `sh`, `find`, `python3`
 *   and the version probes): read the system trees and all of `/proc`, write only their scratch
 *   directory, execute only {@linkcode SYSTEM_TOOLS}. They take no caller input.
 * - `browser`: Chromium ({@linkcode Confinements.browser}); not a spawner thread, since puppeteer
 *   starts Chromium, but the same rules, applied by Chromium's launcher before it becomes
 *   Chromium.
 *
 * Each confinement also has a scratch directory of its own under the state directory, readable
 * and writable by its processes only (`run_code` puts its source files there).
 *
 * Where the kernel has no Landlock, the native spawn is unavailable or `SANDBAR_CONFINEMENT=off`
 * is set, processes start unconfined and {@linkcode confinementWarnings} says so (the
 * capabilities document lists it under `warnings`).
 *
 * @module
 */

import { dirname, join } from "node:path";
import { nativeSpawnSupported } from "../process/posix_spawn.ts";
import { listeningPorts, type ServerState, type Service } from "../state.ts";
import { onReadOnlyMount } from "./fs_probe.ts";
import {
  drawKernelRotation,
  foreignKernelPorts,
  kernelPortBlock,
  type PortBlock,
} from "./kernel_ports.ts";
import { landlockAbi, NET_ABI, type PathRule } from "./landlock.ts";
import {
  allowedExecutables,
  type ConfinementPlan,
  denoBinaryDir,
  planRules,
  type Withheld,
  WRITE,
} from "./rules.ts";
import { Spawner } from "./spawner.ts";
import { PROGRAM_DIRS } from "../guards/commands/program_dirs.ts";
import { EGRESS_SERVICE } from "../egress/service_keys.ts";
import type { IdentityProxies } from "../egress/identity_proxies.ts";
import { bridgeFiles, proxyEnvironment } from "../egress/bridge.ts";
import { missingScope } from "../policy/scopes.ts";

/** What a confined process is for. */
export type ConfinementKind = "process" | "git" | "system";

/**
 * The programs the `system` group runs (and the probe for the kernel's Python): `df`, `grep`
 * and `sh`/`find` over `/proc`, `python3 -I` listing packages, and the version probes.
 */
export const SYSTEM_TOOLS: readonly string[] = [
  "df",
  "grep",
  "sh",
  "bash",
  "find",
  "python3",
  "node",
  "git",
];

/** The name the server's own helper programs are confined under (kind `system`). */
export const SYSTEM_IDENTITY = "server";

/** What Chromium's launcher restricts itself to before it becomes Chromium. */
export interface BrowserConfinement {
  /** The Landlock rules (see {@linkcode planRules}). */
  rules: PathRule[];
  /** TCP ports `connect` is refused to: the server's own. */
  closedPorts: number[];
}

/** The Landlock ABI that scopes signals and abstract unix sockets. */
const SCOPING_ABI = 6;
const ALL = (1n << 16n) - 1n;

/** Why processes run unconfined here, or null when they are confined. */
export function confinementUnavailable(): string | null {
  if (Deno.env.get("SANDBAR_CONFINEMENT") === "off") {
    return "kernel confinement is off (SANDBAR_CONFINEMENT=off): processes the server starts are held only by the string guards";
  }
  if (!nativeSpawnSupported()) {
    return "processes are started by Deno.Command (no libc spawn here): the kernel does not confine them, only the string guards do";
  }
  if (landlockAbi() < 1) {
    return "this kernel has no Landlock: processes the server starts are held only by the string guards (paths, commands), not by the kernel";
  }
  return null;
}

/** How confined processes see `/proc`: see {@linkcode procAccess}. */
export type ProcAccess = "closed" | "open";

const PROC_ACCESS: readonly ProcAccess[] = ["closed", "open"];

/**
 * How confined processes see `/proc`, from `SANDBAR_PROC`:
 *
 * - `closed` (the default): the system-wide files only, no process's directory, its own
 *   included. On a machine where the server's launcher (a shell, `deno task`, `npx`) holds a
 *   token in its environment, that is the only rule that keeps it: the kernel lets a process
 *   read the `environ` of every process of its user, Landlock and non-dumpable notwithstanding.
 * - `open`: all of `/proc` readable (never writable). For a server whose PID namespace holds no
 *   other process with a secret, such as the local provider's sandbox, where the server is the
 *   only holder of its tokens and wipes them from its own environment block at start
 *   (`server/confine/hardening.ts`). Then `ps`, `/proc/self/*` and programs that need them (Deno reads
 *   `/proc/self/maps` before it transpiles TypeScript) work. Processes of different identities
 *   can then read each other's `environ`.
 *
 * Any other value is an error naming the valid ones.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { procAccess } from "./confinement.ts";
 * assert.equal(procAccess({}), "closed");
 * assert.equal(procAccess({ SANDBAR_PROC: "open" }), "open");
 * assert.throws(() => procAccess({ SANDBAR_PROC: "yes" }), /SANDBAR_PROC/);
 * ```
 */
export function procAccess(
  env: Record<string, string | undefined> = { SANDBAR_PROC: Deno.env.get("SANDBAR_PROC") },
): ProcAccess {
  const value = env.SANDBAR_PROC;
  if (value === undefined || value === "") return "closed";
  if ((PROC_ACCESS as readonly string[]).includes(value)) return value as ProcAccess;
  throw new Error(
    `SANDBAR_PROC must be one of ${PROC_ACCESS.map((v) => `"${v}"`).join(", ")}, not ${
      JSON.stringify(value.slice(0, 40))
    }`,
  );
}

/**
 * What the capabilities document says about confinement: nothing when every process is
 * confined in full.
 *
 * @example
 * ```ts ignore
 * const warnings = [...policy.warnings, ...confinementWarnings()];
 * ```
 */
export function confinementWarnings(): string[] {
  const missing = confinementUnavailable();
  if (missing) return [missing];
  const abi = landlockAbi();
  const warnings: string[] = [];
  if (abi < NET_ABI) {
    warnings.push(
      `Landlock ABI ${abi} (4 handles TCP ports): processes the server starts may connect to the server's own ports and to every identity's code kernels`,
    );
  }
  if (abi < SCOPING_ABI) {
    warnings.push(
      `Landlock ABI ${abi} (6 scopes signals and abstract sockets): processes the server starts may signal other processes of its user`,
    );
  }
  return warnings;
}

/**
 * Why the server would not listen on abstract Unix sockets here, or null when it may: they keep
 * every process it starts away from it only where all of them are confined and Landlock scopes
 * abstract sockets (ABI 6: a process in a Landlock domain cannot connect to an abstract socket
 * made outside its domain). `SANDBAR_ABSTRACT_SOCKETS=off` asks for TCP anyway.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { abstractSocketsUnavailable } from "./confinement.ts";
 * assert.match(abstractSocketsUnavailable({ SANDBAR_ABSTRACT_SOCKETS: "off" }) ?? "", /=off/);
 * ```
 */
export function abstractSocketsUnavailable(
  env: Record<string, string | undefined> = {
    SANDBAR_ABSTRACT_SOCKETS: Deno.env.get("SANDBAR_ABSTRACT_SOCKETS"),
  },
): string | null {
  const value = env.SANDBAR_ABSTRACT_SOCKETS;
  if (value === "off") return "abstract sockets are off (SANDBAR_ABSTRACT_SOCKETS=off)";
  if (value !== undefined && value !== "" && value !== "on") {
    throw new Error(
      `SANDBAR_ABSTRACT_SOCKETS must be "on" or "off", not ${JSON.stringify(value.slice(0, 40))}`,
    );
  }
  const missing = confinementUnavailable();
  if (missing) return missing;
  const abi = landlockAbi();
  if (abi < SCOPING_ABI) {
    return `Landlock ABI ${abi} (${SCOPING_ABI} scopes abstract sockets): processes the server starts could connect to them`;
  }
  return null;
}

/**
 * What the capabilities document says about a `network` section: what the kernel does and does
 * not hold of it here. Nothing without one (the policy's own warning says so).
 */
export function egressWarnings(policy: { network: unknown }): string[] {
  if (!policy.network) return [];
  const missing = confinementUnavailable();
  const abi = missing ? 0 : landlockAbi();
  if (missing || abi < NET_ABI) {
    return [
      `network rules hold only programs that use the proxy variables: the kernel cannot refuse other TCP connections here (${
        missing ? "no confinement" : `Landlock ABI ${abi}, 4 handles TCP`
      })`,
    ];
  }
  return [
    "network rules: TCP connections other than to the identity's egress proxy are refused by the kernel (Landlock, by port on any address); UDP (DNS queries, QUIC) and Unix sockets are not, so a program can still send UDP directly",
  ];
}

/** Paths no process the server starts may touch, besides the state directory. */
const protectedPaths = new Set<string>();

/**
 * Withhold `path` (the audit log, the policy file, a data directory) from every process the
 * server starts from now on.
 *
 * @example
 * ```ts ignore
 * protectPath("/var/log/sandbar/audit.jsonl");
 * ```
 */
export function protectPath(path: string): void {
  protectedPaths.add(path);
}

function isInsideTree(path: string, tree: string): boolean {
  return path === tree || path.startsWith(tree.endsWith("/") ? tree : tree + "/");
}

function isLiteralPath(p: string): boolean {
  return p.startsWith("/") && !/[*?[\]{}]/.test(p);
}

/** The system trees a `noexec` mount must never cover (programs and libraries live there). */
const EXECUTABLE_TREES = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"];

/**
 * The writable trees of a plan that are mounted `noexec` for its children: under
 * `allow_commands` (an `exec` list), `paths.allow` and the scratch directory, less any tree that
 * holds the system's programs (an allowed `/` would otherwise stop every program).
 */
export function noexecTrees(plan: ConfinementPlan): string[] {
  if (plan.exec === null) return [];
  const trees = [...plan.readWrite, ...(plan.scratch ? [plan.scratch] : [])];
  return trees.filter((t) => !EXECUTABLE_TREES.some((sys) => isInsideTree(sys, t)));
}

/** The per-server set of confined spawners. */
export class Confinements implements Service {
  readonly #state: ServerState;
  /** This server's rotation of the kernel port blocks (see `kernel_ports.ts`). */
  readonly #kernelRotation = drawKernelRotation();
  readonly #spawners = new Map<string, Spawner>();
  readonly #scratch = new Map<string, string>();

  /** Confinements for `state`'s policy. */
  constructor(state: ServerState) {
    this.#state = state;
  }

  /** The scratch directory of a confinement (made on first ask). */
  scratchDir(identity: string, kind: ConfinementKind = "process"): string {
    const key = `${kind}\0${identity}`;
    let dir = this.#scratch.get(key);
    if (dir) return dir;
    const safe = identity.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64);
    dir = join(this.#state.stateDir, "confined", `${kind}-${safe}-${this.#scratch.size}`);
    Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.#scratch.set(key, dir);
    return dir;
  }

  /**
   * `env` as a confined process of `identity` gets it: a `HOME` outside `paths.allow` (which the
   * process could not read: git, pip and most tools then fail) becomes the identity's scratch
   * directory, private to its processes. With a `network` section in the policy, the proxy
   * variables point at the identity's egress proxy (on every kind of platform).
   */
  environment(identity: string, env: Record<string, string>): Record<string, string> {
    const port = this.egressPort(identity);
    if (port !== null) env = { ...env, ...proxyEnvironment(`127.0.0.1:${port}`) };
    if (confinementUnavailable()) return env;
    const home = env.HOME;
    const allow = this.#state.policy.paths.allow;
    if (home !== undefined && allow.some((t) => isInsideTree(home, t))) return env;
    return { ...env, HOME: this.scratchDir(identity) };
  }

  /**
   * The spawner for `identity`'s processes of `kind`, or null where processes run unconfined
   * (see {@linkcode confinementWarnings}).
   */
  spawner(identity: string, kind: ConfinementKind = "process"): Spawner | null {
    if (confinementUnavailable()) return null;
    const key = `${kind}\0${identity}`;
    let s = this.#spawners.get(key);
    if (!s) {
      const plan = this.plan(identity, kind);
      s = new Spawner(
        planRules(plan),
        this.#closedPorts(kind === "process" ? identity : null),
        kind === "process" ? noexecTrees(plan) : [],
        kind === "system" ? null : this.#connectOnly(identity),
      );
      s.besideServer = kind === "system";
      this.#spawners.set(key, s);
    }
    return s;
  }

  /**
   * The port of `identity`'s egress proxy (started on first ask), or null when the policy has
   * no `network` section and processes use the host's network.
   */
  egressPort(identity: string): number | null {
    const network = this.#state.policy.network;
    if (!network) return null;
    // Started with the server (`startServer`), which alone loads the proxy's code.
    const proxies = this.#state.service<IdentityProxies>(EGRESS_SERVICE, () => {
      throw new Error("the policy has a network section, but the server started no egress proxies");
    });
    return network.has(identity) ? proxies.port(identity) : null;
  }

  /**
   * The only TCP ports `identity`'s processes may connect to under a `network` section: its
   * egress proxy's and its own code kernels'; null (any port not closed) without one.
   */
  #connectOnly(identity: string): number[] | null {
    const port = this.egressPort(identity);
    if (port === null) return null;
    const block = this.kernelPorts(identity);
    const kernels = block
      ? Array.from({ length: block.last - block.first + 1 }, (_, i) => block.first + i)
      : [];
    return [port, ...kernels];
  }

  /**
   * TCP ports a confinement refuses (`connect` and `bind`): the server's own when it listens on
   * TCP (none on abstract sockets, which Landlock's scoping keeps from every confined process:
   * `server/serve.ts`), and the code kernels of every identity but `identity` that may start
   * kernels at all (all of them for `null`). An identity that `run_code` does not admit (a
   * sandbox's files-only `access`) never has one, so its block needs no rule.
   */
  #closedPorts(identity: string | null): number[] {
    const policy = this.#state.policy;
    const ids = policy.identities.map((i) => i.id);
    const runCode = policy.endpoints.get("run_code");
    const holders = new Set(
      runCode?.enabled
        ? policy.identities.filter((i) => missingScope(i.scopes, runCode.scopes) === undefined)
          .map((i) => i.id)
        : [],
    );
    return [
      ...listeningPorts(this.#state.addresses),
      ...foreignKernelPorts(ids, identity, this.#kernelRotation, holders),
    ];
  }

  /**
   * The ports `identity`'s code kernels listen on (see `kernel_ports.ts`), or null when it has
   * no block.
   */
  kernelPorts(identity: string): PortBlock | null {
    const ids = this.#state.policy.identities.map((i) => i.id);
    return kernelPortBlock(ids, identity, this.#kernelRotation);
  }

  /** What no confined process may touch: the state directory, secrets, literal denials. */
  #withheld(): Withheld[] {
    const policy = this.#state.policy;
    const withheld: Withheld[] = [
      { path: this.#state.stateDir, remove: ALL },
      // Granted by rules of their own (see rules.ts), never through a wide `paths.allow` such as
      // `/`: the files of other processes in /proc hold their environments.
      { path: "/proc", remove: ALL },
      { path: "/dev", remove: ALL },
      { path: "/sys", remove: WRITE },
    ];
    for (const p of protectedPaths) withheld.push({ path: p, remove: ALL });
    for (const p of policy.paths.deny) {
      if (isLiteralPath(p)) withheld.push({ path: p, remove: ALL });
    }
    // A tree on a read-only mount cannot be written anyway; withholding its writes would split
    // its parent (grantTree), and a split directory takes no new files (a package checked out
    // under /tmp, bound read-only into a local sandbox, left /tmp without new files).
    for (const p of policy.paths.readOnly) {
      if (!onReadOnlyMount(p)) withheld.push({ path: p, remove: WRITE });
    }
    return withheld;
  }

  /**
   * The spawner of the server's own helper programs (kind `system`: the `system` group and the
   * probe for the kernel's Python), or null where processes run unconfined.
   */
  system(): Spawner | null {
    return this.spawner(SYSTEM_IDENTITY, "system");
  }

  /** The plan of one confinement (exported for the tests and the docs). */
  plan(identity: string, kind: ConfinementKind): ConfinementPlan {
    const policy = this.#state.policy;
    const withheld = this.#withheld();
    const scratch = this.scratchDir(identity, kind);
    if (kind === "system") {
      // No caller input reaches these programs, and they must see every process (ports, load):
      // `/proc` whole, read only; nothing of the caller's is granted.
      return {
        readWrite: [],
        readOnly: [],
        scratch,
        withheld,
        exec: allowedExecutables(SYSTEM_TOOLS, false),
        proc: "open",
      };
    }
    if (kind === "git") {
      const exec = [...allowedExecutables(["git"], false), "/usr/lib/git-core"];
      return {
        readWrite: [],
        readOnly: policy.paths.allow,
        scratch,
        withheld,
        exec,
        proc: procAccess(),
      };
    }
    const allow = policy.allowCommands;
    const deno = allow === undefined || allow.includes("deno") ? [denoBinaryDir()] : [];
    return {
      readWrite: policy.paths.allow,
      proc: procAccess(),
      // The egress bridge's two files: a restricted agents environment runs its commands
      // behind it (`server/agents/environments/network.ts`).
      readOnly: [...deno, ...bridgeFiles()],
      scratch,
      withheld,
      exec: allow === undefined ? null : [...allowedExecutables(allow), ...deno],
    };
  }

  /**
   * Chromium's plan: the system trees and `/proc` read only (as every other confined process does: {@linkcode procAccess}),
   * nothing of `paths.allow` (the URL guard refuses `file:` URLs anyway), writes to `dir` (its
   * profile, home and temp files) and `/dev/shm` only, and execution of `executable` and the
   * helpers beside it alone.
   */
  browserPlan(dir: string, executable: string): ConfinementPlan {
    const exec = allowedExecutables([executable], false);
    const home = dirname(executable);
    // Debian's real binary lives in a directory of its own with its crash handler beside it; a
    // program directory such as /usr/bin is never granted whole.
    if (!PROGRAM_DIRS.includes(home)) exec.push(home);
    return {
      readWrite: [],
      // Fontconfig's system cache: without it every launch would rebuild it into its home.
      readOnly: ["/var/cache/fontconfig"],
      scratch: dir,
      withheld: this.#withheld(),
      exec,
      proc: procAccess(),
    };
  }

  /**
   * The confinement of a Chromium whose files are in `dir`, or null where processes run
   * unconfined (see {@linkcode confinementWarnings}). Puppeteer starts Chromium through Node's
   * `child_process` (its DevTools pipe is descriptors 3 and 4, which the native spawn closes),
   * so a spawner thread cannot start it: its launcher, which already runs between `fork` and
   * Chromium to install the seccomp filter, restricts itself to these rules first.
   */
  browser(dir: string, executable: string): BrowserConfinement | null {
    if (confinementUnavailable()) return null;
    return {
      rules: planRules(this.browserPlan(dir, executable)),
      closedPorts: this.#closedPorts(null),
    };
  }

  /** End every spawner thread. */
  close(): void {
    for (const s of this.#spawners.values()) s.close();
    this.#spawners.clear();
  }
}

/**
 * The server's confinements.
 *
 * @example
 * ```ts ignore
 * const spawner = confinements(c.var.state).spawner(c.var.identity.id);
 * ```
 */
export function confinements(state: ServerState): Confinements {
  return state.service("confine", () => new Confinements(state));
}
