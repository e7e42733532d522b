/**
 * The command line that starts a local sandbox.
 *
 * With bubblewrap (`bwrap` on PATH), the sandbox gets every namespace bubblewrap can make
 * (user, mount, PID, network, IPC, UTS, cgroup), no capabilities, and a file system of its own:
 *
 * | inside                 | what                                                         |
 * | ---------------------- | ------------------------------------------------------------ |
 * | `/usr`, `/bin`, `/lib` | the host's, read-only (`/bin` etc. as the host has them)     |
 * | `/etc`                 | a few files the tools need (passwd, hosts, ssl, …), read-only |
 * | `/home/user`           | the sandbox's own directory, writable (the server's root)   |
 * | `/tmp`                 | the sandbox's own, on its disk (capped by `disk`)            |
 * | `/dev/shm`             | a fresh tmpfs, no larger than the memory limit               |
 * | `/opt/sandbar/bin/deno`| this Deno, read-only                                         |
 * | the package           | read-only, at its host path (the server runs from there)     |
 * | DENO_DIR               | its host path, read-only: the package's parts of the host's  |
 * |                        | cache and its prepared snapshots (`module_cache.ts`)         |
 * | `/run/sandbar`         | the policy file, the server's state, the relay's key (once)  |
 * | `/run/sandbar-channel` | the supervisor's socket the relay connects to, read-only     |
 * | `/sys/fs/cgroup/…`     | the sandbox's own cgroup, read-only (its limits)             |
 * | `/proc/meminfo`        | the sandbox's memory (its limit and use), kept current       |
 *
 * Its network namespace has only a loopback interface: nothing in it can reach the host's
 * loopback, the LAN or the internet. The in-sandbox server listens on two abstract Unix sockets
 * named at random (`--abstract-sockets`), which Landlock keeps every process it starts from
 * connecting to, or, on a kernel without Landlock's scoping (ABI 6), on 127.0.0.1:9000 and 9001
 * inside, closed to those processes by port rules; the relay in its process bridges the
 * namespace to the host's supervisor through a Unix socket in a directory the sandbox cannot
 * write (see `channel.ts`), and the host's 9000 and 9001 reach the server either way.
 *
 * Without bubblewrap, the server runs directly on the host under its narrowed Deno permissions,
 * with the sandbox directory as its root; ports are then the host's.
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import { onPath } from "./on_path.ts";
import { ENDPOINTS } from "../../../server/endpoints.ts";
import { narrowedServerArgv } from "../../../server/launch.ts";
import { compilePolicy } from "../../../server/policy/compile.ts";
import type { PolicyFile } from "../../../server/policy/schema.ts";
import { ValidationError } from "../../errors/mod.ts";
import {
  CHANNEL_ENV,
  CHANNEL_SOCKET,
  EGRESS_BRIDGE_PORT,
  EGRESS_CA_INSIDE,
  EGRESS_SOCKET,
  RELAY_KEY_FILE,
} from "./channel.ts";
import type { CgroupRef } from "./cgroup.ts";
import { MEMINFO_FILE } from "./meminfo.ts";
import { proxyEnvironment } from "../../../server/egress/bridge.ts";
import type { PackageSource } from "./package_source.ts";
import { CACHE_DATABASES, packageCacheDirs } from "./module_cache.ts";
import type { Isolation } from "./state.ts";

/** What the launch plan is made from. */
export interface LaunchInputs {
  /** How to isolate. */
  isolation: Isolation;
  /** The sandbox's directory on the host. */
  sandboxDir: string;
  /** The sandbox's home on the host. */
  rootDir: string;
  /** The run directory on the host. */
  runDir: string;
  /** The sandbox's `/tmp` on the host. */
  tmpDir: string;
  /** The memory limit in MiB (it bounds `/dev/shm`, which is memory), or null. */
  memory?: number | null;
  /** The sandbox's cgroup, bound read-only where a container finds its own (its limits). */
  cgroup?: CgroupRef;
  /** The directory of the supervisor's channel socket on the host (read-only inside). */
  channelDir: string;
  /** Environment variables of the sandbox. */
  envs: Record<string, string>;
  /** The in-sandbox server's token. */
  serverToken: string;
  /** The token of the files-only access identity, and the variable the policy reads it from. */
  access: { env: string; token: string };
  /** A named-commands file on the host. */
  commandsFile?: string;
  /** A sandbox of the warm pool: its server waits for a claim on stdin (`server/claim.ts`). */
  awaitClaim?: boolean;
  /** The in-sandbox server's policy (written to `policy.json` in the run directory). */
  policy: Record<string, unknown>;
  /** Where the server and the relay are run from. */
  source: PackageSource;
  /** Deno's cache directory (the package's parts of it are mounted read-only inside). */
  denoDir: string;
  /**
   * The snapshots of Deno's cache databases prepared for this package (`module_cache.ts`): with
   * bubblewrap, the sandbox's `DENO_DIR` holds them beside the package's parts of the host's
   * `npm/`, `remote/` and `gen/`; without them, no databases (the server compiles what it loads).
   */
  moduleCache?: string;
  /**
   * Whether the sandbox reaches out through its egress proxy (bubblewrap only): the relay then
   * bridges 127.0.0.1:3128 inside to the proxy's socket, and the proxy variables point there.
   */
  egress?: boolean;
  /**
   * The host directory of the sandbox's egress CA (secrets attached to hosts): bound read-only
   * inside, and named by the variables TLS clients read their trusted certificates from.
   */
  egressCaDir?: string;
}

/** The command line, its environment, and the sandbox's home as seen inside. */
export interface LaunchPlan {
  /** argv[0] and its arguments. */
  argv: string[];
  /** The environment (nothing else is inherited). */
  env: Record<string, string>;
  /** The home directory inside. */
  home: string;
  /**
   * Files to write (mode 0600) in the run directory before starting, by name. With bubblewrap
   * the tokens go this way rather than through the environment: bubblewrap's own processes
   * (PID 1 inside) keep their environment readable by anything running as the same user.
   */
  secrets: Record<string, string>;
}

/** Deno's cache directory, as `deno info` reports it. */
export function denoDir(): string {
  return Deno.env.get("DENO_DIR") ??
    join(Deno.env.get("XDG_CACHE_HOME") ?? join(Deno.env.get("HOME") ?? "/root", ".cache"), "deno");
}

const INSIDE_HOME = "/home/user";
const INSIDE_RUN = "/run/sandbar";
/** Where the supervisor's channel socket is inside (mounted read-only). */
const INSIDE_CHANNEL = "/run/sandbar-channel";
/** Where Deno is inside a bubblewrap sandbox. */
export const INSIDE_DENO = "/opt/sandbar/bin/deno";
const INSIDE_COMMANDS = "/opt/sandbar/commands";
const ETC_FILES = [
  "passwd",
  "group",
  "hosts",
  "resolv.conf",
  "nsswitch.conf",
  "host.conf",
  "gai.conf",
  "ssl",
  "ca-certificates",
  "ca-certificates.conf",
  "alternatives",
  "ld.so.cache",
  "ld.so.conf",
  "ld.so.conf.d",
  "localtime",
  "timezone",
  "os-release",
  "debian_version",
  "bash.bashrc",
  "profile",
  "inputrc",
  "mime.types",
  "magic",
  "magic.mime",
  "gitconfig",
];

/**
 * The variables TLS clients read trusted certificates from, for a sandbox whose egress CA is in
 * `dir` (`ca.pem`, and `bundle.pem`: the system's roots and it): OpenSSL and curl, Python's
 * `ssl` and `requests`, pip, git, Node and Deno.
 */
export function trustEnvironment(dir: string): Record<string, string> {
  const bundle = `${dir}/bundle.pem`;
  const ca = `${dir}/ca.pem`;
  return {
    SSL_CERT_FILE: bundle,
    REQUESTS_CA_BUNDLE: bundle,
    CURL_CA_BUNDLE: bundle,
    PIP_CERT: bundle,
    GIT_SSL_CAINFO: bundle,
    NODE_EXTRA_CA_CERTS: ca,
    DENO_CERT: ca,
  };
}

/** Is `bwrap` on PATH? */
export function findBwrap(): string | null {
  return onPath("bwrap");
}

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** `/bin`, `/lib`…: a symlink into /usr where the host has one (usrmerge), else a bind. */
function topLevelDirs(): string[] {
  const args: string[] = [];
  for (const name of ["bin", "sbin", "lib", "lib64", "lib32", "libx32"]) {
    const host = `/${name}`;
    try {
      const info = Deno.lstatSync(host);
      if (info.isSymlink) args.push("--symlink", Deno.readLinkSync(host), host);
      else if (info.isDirectory) args.push("--ro-bind", host, host);
    } catch { /* absent on this host */ }
  }
  return args;
}

function etcBinds(): string[] {
  const names = new Set(ETC_FILES);
  try {
    for (const e of Deno.readDirSync("/etc")) if (/^python3/.test(e.name)) names.add(e.name);
  } catch { /* no /etc */ }
  return [...names].flatMap((n) => ["--ro-bind-try", `/etc/${n}`, `/etc/${n}`]);
}

/**
 * The server's command line, already narrowed: `server/main.ts` run with `-A` is a launcher
 * that starts the real server as its child (two Deno start-ups); the sandbox starts the narrowed
 * server at once with the same command line the launcher uses (`narrowedServerArgv`): half the
 * start time, the same permissions.
 */
function serverArgs(
  deno: string,
  pkg: string | undefined,
  paths: { home: string; run: string; commands?: string },
  policy: Record<string, unknown>,
  env: Record<string, string>,
  denoFlags: readonly string[] = [],
  abstractSockets = false,
  inside?: { path: string; denoDir: string },
) {
  const policyFile = join(paths.run, "policy.json");
  const stateDir = join(paths.run, "state");
  let compiled;
  try {
    compiled = compilePolicy(policy as PolicyFile, {
      root: paths.home,
      env,
      // Every id, built or not: the flags depend only on what the policy switches on.
      implemented: new Set(ENDPOINTS.map((e) => e.id)),
      defaultToken: env.SVC_SERVER_TOKEN,
      configured: true,
    });
  } catch (e) {
    throw new ValidationError(`Invalid policy: ${(e as Error).message}`);
  }
  const argv = narrowedServerArgv({
    deno,
    packageDir: pkg,
    policy: compiled,
    root: paths.home,
    host: "127.0.0.1",
    stateDir,
    commandsFile: paths.commands,
    policyFile,
    cachedOnly: true,
    denoFlags,
    abstractSockets,
    inside,
    serverArgs: [
      "--root",
      paths.home,
      "--policy",
      policyFile,
      ...(paths.commands ? ["--commands", paths.commands] : []),
    ],
  });
  return { stateDir, argv };
}

/**
 * The sandbox's own cgroup, read-only where a container looks for its limits: `/proc/self/cgroup`
 * says `/` inside its cgroup namespace, so `/sys/fs/cgroup/<controller>/` (v1) or
 * `/sys/fs/cgroup/` (v2) is its own cgroup's directory.
 */
function cgroupBinds(ref: CgroupRef | undefined): string[] {
  if (!ref) return [];
  if (ref.version === 2) return ["--ro-bind", ref.dirs.unified, "/sys/fs/cgroup"];
  return Object.entries(ref.dirs).flatMap(([c, dir]) => ["--ro-bind", dir, `/sys/fs/cgroup/${c}`]);
}

/**
 * The sandbox's `DENO_DIR` (bubblewrap's arguments), at the host's path: a tmpfs, read-only once
 * filled, holding the package's parts of the host's cache (`packageCacheDirs`) and the snapshots
 * `prepared` for it, never the host's whole `DENO_DIR` (its other programs' code) nor the
 * journals of its live databases (SQLite would read the host's journal into the snapshots). See
 * `module_cache.ts`.
 */
export function denoDirBinds(
  cache: string,
  source: PackageSource,
  prepared: string | undefined,
): string[] {
  const args = ["--tmpfs", cache];
  for (const dir of packageCacheDirs(source, cache)) {
    args.push("--ro-bind-try", join(cache, dir), join(cache, dir));
  }
  for (const name of prepared ? CACHE_DATABASES : []) {
    for (const suffix of ["", "-wal", "-shm"]) {
      args.push("--ro-bind-try", join(prepared!, name + suffix), join(cache, name + suffix));
    }
  }
  args.push("--remount-ro", cache);
  return args;
}

/**
 * The launch plan of a sandbox.
 *
 * @example
 * ```ts ignore
 * const plan = launchPlan({ isolation: "bwrap", sandboxDir, rootDir, runDir, envs: {}, serverToken });
 * new Deno.Command(plan.argv[0], { args: plan.argv.slice(1), env: plan.env, clearEnv: true });
 * ```
 */
export function launchPlan(inputs: LaunchInputs): LaunchPlan {
  const pkg = inputs.source.dir ?? undefined;
  const cache = inputs.denoDir;
  const bwrap = inputs.isolation === "bwrap" ? findBwrap() : null;
  if (inputs.isolation === "bwrap" && !bwrap) throw new Error("bwrap is not on PATH");
  const home = bwrap ? INSIDE_HOME : inputs.rootDir;
  const env: Record<string, string> = {
    HOME: home,
    PATH: `${bwrap ? "/opt/sandbar/bin:" : ""}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:` +
      "/sbin:/bin",
    LANG: "C.UTF-8",
    TMPDIR: bwrap ? "/tmp" : inputs.tmpDir,
    DENO_DIR: cache,
    DENO_NO_UPDATE_CHECK: "1",
    ...inputs.envs,
    SVC_SERVER_TOKEN: inputs.serverToken,
    [inputs.access.env]: inputs.access.token,
  };
  if (!bwrap) {
    const paths = { home, run: inputs.runDir, commands: inputs.commandsFile };
    const { argv, stateDir } = serverArgs(Deno.execPath(), pkg, paths, inputs.policy, env);
    env.SANDBAR_STATE_DIR = stateDir;
    env.SANDBAR_ISOLATION = "none"; // the server lists it under the capabilities' warnings
    argv.push("--port", "0", "--pty-port", "0", ...(inputs.awaitClaim ? ["--await-claim"] : []));
    // No PID namespace here: tie the server's life to the supervisor's (as bubblewrap's
    // --die-with-parent does) so a killed supervisor cannot leave it running.
    const setpriv = onPath("setpriv");
    return {
      argv: setpriv ? [setpriv, "--pdeathsig", "KILL", ...argv] : argv,
      env,
      home,
      secrets: {},
    };
  }
  const commandsInside = inputs.commandsFile
    ? join(INSIDE_COMMANDS, basename(inputs.commandsFile))
    : undefined;
  const paths = { home, run: INSIDE_RUN, commands: commandsInside };
  const channelSocket = join(INSIDE_CHANNEL, CHANNEL_SOCKET);
  const egressSocket = join(INSIDE_CHANNEL, EGRESS_SOCKET);
  const keyFile = join(INSIDE_RUN, RELAY_KEY_FILE);
  // The relay runs in the server's process, loaded first (`relay.ts`): one Deno process inside.
  // Its own permissions on top of the server's: its socket (and the egress proxy's), its key.
  const relayFlags = [
    "--preload",
    inputs.source.module("sdk/providers/local/relay.ts"),
    `--allow-net=unix:${channelSocket}${inputs.egress ? `,unix:${egressSocket}` : ""}`,
    `--allow-read=${INSIDE_CHANNEL},${keyFile}`,
    `--allow-write=${INSIDE_CHANNEL},${keyFile}`,
  ];
  const { argv: server, stateDir } = serverArgs(
    INSIDE_DENO,
    pkg,
    paths,
    inputs.policy,
    env,
    relayFlags,
    true,
    // Its permissions name the sandbox's `PATH` and Deno, not the host's: the host's directories
    // (a `~/.cargo/bin`, where `npx` keeps Deno) are not there, and its `/opt/sandbar/bin` is.
    { path: env.PATH, denoDir: cache },
  );
  env.SANDBAR_STATE_DIR = stateDir;
  // TCP instead of abstract sockets, asked for on the host (tests of the fallback, a kernel
  // under suspicion): the server checks the value.
  const sockets = Deno.env.get("SANDBAR_ABSTRACT_SOCKETS");
  if (sockets !== undefined) env.SANDBAR_ABSTRACT_SOCKETS = sockets;
  // The sandbox's PID namespace holds bubblewrap's init and the server (with its relay), which
  // wipes its tokens from its environment block at start: its processes may read /proc, which
  // `ps`, `/proc/self/*` and Deno's TypeScript transpiler need.
  env.SANDBAR_PROC = "open";
  // The sandbox's network is its provider's: a namespace with no way out but the egress bridge.
  env.SANDBAR_EGRESS = "provider";
  if (inputs.egress) Object.assign(env, proxyEnvironment(`127.0.0.1:${EGRESS_BRIDGE_PORT}`));
  if (inputs.egressCaDir) Object.assign(env, trustEnvironment(EGRESS_CA_INSIDE));
  server.push(
    "--port",
    "9000",
    "--pty-port",
    "9001",
    // Where the kernel keeps the sandbox's processes from them (`server/serve.ts`); the relay,
    // in the same process, maps the host's 9000 and 9001 to them.
    "--abstract-sockets",
    ...(inputs.awaitClaim ? ["--await-claim"] : []),
  );
  // Where the relay finds its socket and key; it removes the variables before the server loads.
  const channelVars: Record<string, string> = {
    [CHANNEL_ENV.socket]: channelSocket,
    [CHANNEL_ENV.key]: keyFile,
    ...(inputs.egress ? { [CHANNEL_ENV.egress]: egressSocket } : {}),
  };
  // `exec` makes the server the sandbox's main process, so the sandbox ends when the server
  // does; its relay ends it when the host's channel closes (without it the sandbox is
  // unreachable).
  // The tokens are read from their files (which are then removed), and they reach the server
  // alone through its environment; the server then marks itself non-dumpable
  // (server/confine/hardening.ts).
  const secretVars = { SVC_SERVER_TOKEN: "server_token", [inputs.access.env]: "access_token" };
  const secrets: Record<string, string> = {};
  const reads: string[] = [];
  const tokenFiles: string[] = [];
  const assigns: string[] = Object.entries(channelVars).map(([k, v]) => `${k}=${shellQuote(v)}`);
  for (const [variable, file] of Object.entries(secretVars)) {
    secrets[file] = env[variable];
    delete env[variable];
    const path = shellQuote(join(INSIDE_RUN, file));
    reads.push(`read -r ${variable} < ${path}`);
    tokenFiles.push(path);
    assigns.push(`${variable}="$${variable}"`);
  }
  // One `rm` for both (each is a program's start).
  reads.push(`rm -f ${tokenFiles.join(" ")}`);
  // On cgroup v2 with `work` delegated for process trees, the sandbox's cgroup namespace was
  // rooted at `work`: bubblewrap's init and this shell leave it for the `server` leaf by the
  // host-opened `home:` descriptor before the server starts, so the server's memory is charged to
  // its reserve from its first page (`tree_delegation.ts`).
  const leaveWork = 'case ";$SANDBAR_WORK_FDS;" in *";home:"*) ' +
    "h=${SANDBAR_WORK_FDS##*home:}; h=${h%%;*}; { echo 1 >&$h && echo $$ >&$h; } || " +
    '{ echo "sandbar: cannot leave the work cgroup for the server leaf" >&2; exit 125; };; esac; ';
  const script = `${leaveWork}${reads.join(" && ")} && ${assigns.join(" ")} exec ${
    server.map(shellQuote).join(" ")
  }`;
  const argv = [
    bwrap,
    "--unshare-all",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    "--hostname",
    "sandbox",
    "--ro-bind",
    "/usr",
    "/usr",
    ...topLevelDirs(),
    "--proc",
    "/proc",
    // The sandbox's memory, not the host's, for `free` and the like (see `meminfo.ts`).
    ...(inputs.cgroup && inputs.memory
      ? ["--ro-bind-try", join(inputs.channelDir, MEMINFO_FILE), "/proc/meminfo"]
      : []),
    "--dev",
    "/dev",
    // /dev/shm is memory: charged to the sandbox's memory limit, and no larger than it.
    ...(inputs.memory ? ["--size", `${inputs.memory * 1024 * 1024}`] : []),
    "--tmpfs",
    "/dev/shm",
    // /tmp is on the sandbox's disk, under its cap, and kept with its files.
    "--bind",
    inputs.tmpDir,
    "/tmp",
    "--dir",
    "/var/tmp",
    "--ro-bind-try",
    "/var/lib/dpkg",
    "/var/lib/dpkg",
    "--dir",
    "/etc",
    ...etcBinds(),
    "--bind",
    inputs.rootDir,
    INSIDE_HOME,
    "--bind",
    inputs.runDir,
    INSIDE_RUN,
    "--ro-bind",
    inputs.channelDir,
    INSIDE_CHANNEL,
    "--ro-bind",
    Deno.execPath(),
    INSIDE_DENO,
    ...(pkg ? ["--ro-bind", pkg, pkg] : []),
    ...denoDirBinds(cache, inputs.source, inputs.moduleCache),
    ...(inputs.commandsFile ? ["--ro-bind", dirname(inputs.commandsFile), INSIDE_COMMANDS] : []),
    ...(inputs.egressCaDir ? ["--ro-bind", inputs.egressCaDir, EGRESS_CA_INSIDE] : []),
    ...cgroupBinds(inputs.cgroup),
    "--chdir",
    INSIDE_HOME,
    "/bin/sh",
    "-c",
    script,
  ];
  return { argv, env, home, secrets };
}
