/**
 * Deno permissions as defense in depth. The server runs its own file and network work under the
 * narrowest `--allow-read`, `--allow-write` and `--allow-net` the policy implies, so a bug in a
 * guard is still refused by the runtime: reads inside the allowed trees and the system
 * directories the system group reports on; writes inside the allowed trees less the read-only
 * ones (`--deny-write`) and the server's private state directory; the network on the listening
 * host and the hosts of `url_allow`.
 *
 * What this does not cover, said plainly: processes the server starts (shells, `run_code`,
 * Chromium) are not Deno code and are not bound by these flags; they are bound by the command,
 * path and environment guards and, under the local provider, by bubblewrap.
 *
 * @module
 */

import { dirname, isAbsolute, resolve } from "node:path";
import { parseIp, parseUrlPattern } from "../guards/urls/index.ts";
import type { CompiledPolicy } from "../policy/compile.ts";

/** What the permission flags are computed from. */
export interface PermissionInputs {
  /** The compiled policy. */
  policy: CompiledPolicy;
  /** The server's root directory. */
  root: string;
  /** The listening host. */
  host: string;
  /** The server's private state directory (temp files). */
  stateDir: string;
  /** A `--commands` file, if any; its directory is readable so it can import neighbours. */
  commandsFile?: string;
  /** An audit log file, if any; writable. */
  auditLog?: string;
  /** The policy file, if any; readable (the server reads it again after the launcher). */
  policyFile?: string;
  /** The agents group's data directory, if any; readable and writable. */
  dataDir?: string;
  /** The agents group's upstream `host[:port]`, if any; reachable when the group is on. */
  upstreamHost?: string;
  /**
   * The server listens on abstract Unix sockets (`--abstract-sockets`): Deno names no abstract
   * socket in an `--allow-net` list (2.9.6 asks for `unix:\0name` and refuses every way of
   * writing it), so the net permission is then unrestricted. Only sandboxes ask for it, whose
   * network namespace holds nothing but its own loopback (no route out), where a list of
   * `127.0.0.1` already granted every port there was; what it adds is other loopback addresses
   * of the same namespace and named Unix sockets the server can see.
   */
  abstractSockets?: boolean;
  /**
   * Where the server runs in a file system and environment other than this process's (a
   * container): its `PATH`, its Deno binary and its `DENO_DIR` there, which are readable instead
   * of this process's own (whose directories, such as a `~/.cargo/bin` on the host's `PATH`, may
   * not exist there, while the image's own do). A chosen Chromium (`SANDBAR_CHROMIUM`) is this
   * process's setting and is not added then.
   */
  inside?: ServerRuntime;
}

/** The server's runtime as seen where it runs: see {@linkcode PermissionInputs.inside}. */
export interface ServerRuntime {
  /** Its `PATH`. */
  path: string;
  /** Its Deno binary. */
  deno: string;
  /** Its `DENO_DIR`. */
  denoDir: string;
}

/** Read-only system locations the system group and the runtime itself need. */
const SYSTEM_READ = ["/proc", "/sys", "/etc", "/usr", "/bin", "/lib", "/lib64", "/var/lib/dpkg"];

function hostOf(pattern: string): string | undefined {
  const m = /^[a-z]+:\/\/(\[[^\]]+\]|[^/:*]+)/i.exec(pattern);
  return m?.[1];
}

/** True when a browser endpoint is on. */
function browserEnabled(policy: CompiledPolicy): boolean {
  return [...policy.endpoints.values()].some((e) => e.spec.group === "browser" && e.enabled);
}

/**
 * The browser's guard proxies (`server/browser/socks_guard.ts`) listen on 127.0.0.1 and connect
 * to the exact addresses they checked. Chromium itself is not Deno code; its DevTools channel
 * is a pipe, so it needs no socket here.
 */
function browserNet(policy: CompiledPolicy): string[] {
  return browserEnabled(policy) ? ["127.0.0.1"] : [];
}

/**
 * The proxies connect by address (a name resolved once, so DNS rebinding cannot switch it), and
 * Deno's `--allow-net` judges the address, not the name. So unless every `url_allow` pattern
 * names an address literal, the browser may need any host: the URL guard, not Deno, then
 * decides. (Empty `url_allow` means any public host.)
 */
function browserNeedsAnyHost(policy: CompiledPolicy): boolean {
  if (!browserEnabled(policy)) return false;
  if (policy.urlAllow.length === 0) return true;
  return policy.urlAllow.some((p) => {
    const host = parseUrlPattern(p).host;
    return host.kind !== "exact" || !parseIp(host.host.replace(/^\[|\]$/g, ""));
  });
}

/**
 * The `deno run` permission flags for the server process.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { permissionFlags } from "./deno_permissions.ts";
 * import { compilePolicy } from "../policy/compile.ts";
 * const policy = compilePolicy({ preset: "readonly" }, { root: "/workspace", env: {},
 *   implemented: new Set(["health"]), defaultToken: "0123456789abcdef0123", configured: true });
 * const inputs = { policy, root: "/workspace", host: "127.0.0.1", stateDir: "/tmp/s" };
 * const flags = permissionFlags(inputs);
 * assert.ok(flags.some((f) => f.startsWith("--allow-read=") && f.includes("/workspace")));
 * assert.ok(!flags.includes("--allow-all"));
 * ```
 */
export function permissionFlags(inputs: PermissionInputs): string[] {
  const { policy } = inputs;
  // Loaded by URL (from a registry) the package is in Deno's cache, which is read below.
  const here = new URL(import.meta.url);
  const packageDir = here.protocol === "file:" ? resolve(dirname(here.pathname), "../..") : null;
  const { inside } = inputs;
  const denoDir = inside?.denoDir ?? Deno.env.get("DENO_DIR") ??
    resolve(Deno.env.get("HOME") ?? "/root", ".cache/deno");
  const read = new Set([
    ...policy.paths.allow,
    resolve(inputs.root),
    inputs.stateDir,
    ...(packageDir ? [packageDir] : []),
    denoDir,
    ...SYSTEM_READ,
  ]);
  // The process group finds programs the way execvp does before it spawns them (to answer
  // process_invalid for a missing one, and to skip bash for plain commands); that needs a look
  // into each PATH directory and at the Deno that runs run_code's JavaScript. Listing where
  // programs live reveals nothing the shell cannot already see.
  const path = inside ? inside.path : Deno.env.get("PATH") ?? "";
  for (const dir of path.split(":")) if (isAbsolute(dir)) read.add(dir);
  // puppeteer checks that the Chromium it launches exists; a chosen one may live anywhere.
  const chromium = inside ? undefined : Deno.env.get("SANDBAR_CHROMIUM");
  if (browserEnabled(policy) && chromium && isAbsolute(chromium)) read.add(chromium);
  read.add(dirname(inside?.deno ?? Deno.execPath()));
  if (inputs.commandsFile) read.add(dirname(resolve(inputs.commandsFile)));
  if (inputs.policyFile) read.add(resolve(inputs.policyFile));
  const write = new Set([...policy.paths.allow, inputs.stateDir]);
  if (inputs.auditLog) write.add(resolve(inputs.auditLog));
  const agentsOn = [...policy.endpoints.values()].some((e) =>
    e.spec.group === "agents" && e.enabled
  );
  if (inputs.dataDir && agentsOn) {
    read.add(inputs.dataDir);
    write.add(inputs.dataDir);
  }
  const net = new Set([inputs.host]);
  if (inputs.upstreamHost && agentsOn) net.add(inputs.upstreamHost);
  for (const p of policy.urlAllow) {
    const h = hostOf(p);
    if (h) net.add(h);
  }
  const flags = [
    `--allow-read=${[...read].join(",")}`,
    `--allow-write=${[...write].join(",")}`,
    // The egress proxies connect by address to whatever their rules allow (the policy's
    // network, a restricted agents environment's allowed_domains); they, not Deno, decide.
    browserNeedsAnyHost(policy) || policy.network !== null || agentsOn || inputs.abstractSockets
      ? "--allow-net"
      : `--allow-net=${[...new Set([...net, ...browserNet(policy)])].join(",")}`,
    "--allow-env",
    "--allow-run",
    "--allow-sys",
    "--allow-ffi",
  ];
  if (policy.paths.readOnly.length > 0) {
    flags.push(`--deny-write=${policy.paths.readOnly.join(",")}`);
  }
  return flags;
}
