/**
 * What a docker sandbox's container is made of: the engine's create body.
 *
 * The image is any local image with glibc and `/bin/sh`: nothing of sandbar is baked in. The
 * in-sandbox server runs from this host's Deno binary and this package's modules and Deno's
 * cache, bound read-only (the local provider's approach):
 *
 * | inside                  | what                                                             |
 * | ----------------------- | ---------------------------------------------------------------- |
 * | `/opt/sandbar/bin/deno` | this Deno, read-only                                             |
 * | the package             | read-only, at its host path                                      |
 * | DENO_DIR                | at its host path, read-only: the package's prepared caches (`module_cache.ts`) and its part of the host's module directories, nothing of the host's other programs |
 * | `/run/sandbar-host`     | the sandbox's host directory, read-only: the policy, the end of its lifetime, the SDK processes' sockets, the egress proxy's socket |
 * | `/run/sandbar`          | a tmpfs: the server's state                                      |
 * | `/home/user`            | the working directory (the server's root)                        |
 *
 * The main process (under the engine's `docker-init`) is a shell that forks the lifetime watch
 * first, then reads the two tokens and the relay's key from its stdin (the provider attached to
 * the container before it started and wrote them there, over the engine's socket, then closed
 * it: nothing of the tokens is left in the container's file system, labels aside), writes the
 * key to a root-only file in the tmpfs, and `exec`s the server with the tokens in its environment
 * alone and `/dev/null` as its stdin. The relay, preloaded into the server's process, spends its
 * key and connects to the creating process's socket before any module of the server loads; the
 * server wipes the tokens from its environment block at start. The provider reads the container's output on the same attach until the
 * server's `listening` line, rather than polling the engine. The watch reads the end time (seconds
 * since the epoch) from `/run/sandbar-host/end_at` every second; when it has passed it kills
 * every process, the server ends, `docker-init` ends and the engine removes the container
 * (`AutoRemove`, anonymous volumes with it). The container has no network (`NetworkMode:
 * none`); the server listens on two abstract Unix sockets named at random where the kernel's
 * Landlock scopes them (ABI 6; otherwise on 127.0.0.1:9000 and 9001 inside), and the SDK
 * reaches it through the relay (`channel.ts`), and a sandbox created with
 * `network` reaches out only through its egress keeper's proxy (`egress_keeper.ts`), which the
 * relay bridges to 127.0.0.1:3128 (the local provider's bridge); with secrets, its CA
 * certificate is bound read-only at `/opt/sandbar/egress-ca`.
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import { packageCacheDirs } from "../local/module_cache.ts";
import { ENDPOINTS } from "../../../server/endpoints.ts";
import { narrowedServerArgv } from "../../../server/launch.ts";
import { compilePolicy } from "../../../server/policy/compile.ts";
import type { PolicyFile } from "../../../server/policy/schema.ts";
import { ValidationError } from "../../errors/mod.ts";
import { EGRESS_CA_INSIDE } from "../local/channel.ts";
import type { PackageSource } from "../local/package_source.ts";

/** Where things are inside the container. */
export const INSIDE = {
  deno: "/opt/sandbar/bin/deno",
  home: "/home/user",
  host: "/run/sandbar-host",
  run: "/run/sandbar",
  commands: "/opt/sandbar/commands",
} as const;

/**
 * The creating process's relay runs in the server's process (the local provider's
 * `sdk/providers/local/relay.ts`, preloaded): its one-time key is written here by the start
 * script and removed by the relay before the server loads.
 */
export const RELAY_KEY_INSIDE = `${INSIDE.run}/relay_key`;

/** The access token's variable and files-only identity (as the local provider's). */
export const ACCESS_TOKEN_ENV = "SANDBAR_ACCESS_TOKEN";

/** The default policy: the whole container, sandbar's own mounts read-only or denied. */
export function defaultPolicy(source: PackageSource, denoDir: string): Record<string, unknown> {
  return {
    paths: {
      allow: ["/"],
      read_only: [
        "/opt/sandbar",
        "/proc",
        "/sys",
        "/dev",
        ...(source.dir ? [source.dir] : []),
        denoDir,
      ],
      deny: [INSIDE.run, `${INSIDE.run}/**`, INSIDE.host, `${INSIDE.host}/**`],
    },
  };
}

/** The policy with the caller's on top and the access identity added. */
export function policyFor(
  given: Record<string, unknown> | string | undefined,
  source: PackageSource,
  denoDir: string,
): Record<string, unknown> {
  const base = defaultPolicy(source, denoDir);
  const user = typeof given === "string" ? { preset: given } : given ?? {};
  const identities = Array.isArray(user.identities) ? user.identities : [];
  const access = {
    id: "access",
    token_env: ACCESS_TOKEN_ENV,
    scopes: ["files:read", "files:write"],
  };
  return { ...base, ...user, identities: [...identities, access] };
}

/**
 * The `PATH` an engine gives a container whose image and create body set none (Docker's
 * `DefaultPathEnv`, Podman's alike).
 */
export const ENGINE_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * The `PATH` the container's processes start with: the sandbox's own (`env`), else the image's
 * (its configuration's `Env`), else the engine's default. Never this host's.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { containerPath, ENGINE_DEFAULT_PATH } from "./launch.ts";
 * assert.equal(containerPath({}, ["LANG=C", "PATH=/opt/conda/bin:/usr/bin"]), "/opt/conda/bin:/usr/bin");
 * assert.equal(containerPath({ PATH: "/tools" }, ["PATH=/usr/bin"]), "/tools");
 * assert.equal(containerPath({}, null), ENGINE_DEFAULT_PATH);
 * ```
 */
export function containerPath(
  env: Record<string, string>,
  imageEnv: readonly string[] | null | undefined,
): string {
  if (env.PATH !== undefined) return env.PATH;
  const image = (imageEnv ?? []).findLast((e) => e.startsWith("PATH="));
  return image !== undefined ? image.slice("PATH=".length) : ENGINE_DEFAULT_PATH;
}

/** Inputs of {@linkcode serverArgv}. */
export interface ServerInputs {
  /** The package. */
  source: PackageSource;
  /** The container's `PATH` ({@linkcode containerPath}): its directories are readable. */
  path: string;
  /** `DENO_DIR` (on the host, bound at the same path inside). */
  denoDir: string;
  /** The policy. */
  policy: Record<string, unknown>;
  /** The server's environment (with both tokens, for the policy's compilation). */
  env: Record<string, string>;
  /** A named-commands file on the host. */
  commandsFile?: string;
  /** The creating process's socket inside, which the preloaded relay connects to. */
  channelSocket: string;
  /** With `network`: the egress proxy's socket inside, which the relay bridges 3128 to. */
  egressSocket?: string;
}

/** The server's argv inside the container, narrowed to the policy, with the relay preloaded. */
export function serverArgv(inputs: ServerInputs): string[] {
  let compiled;
  try {
    compiled = compilePolicy(inputs.policy as PolicyFile, {
      root: INSIDE.home,
      env: inputs.env,
      implemented: new Set(ENDPOINTS.map((e) => e.id)),
      defaultToken: inputs.env.SVC_SERVER_TOKEN,
      configured: true,
    });
  } catch (e) {
    throw new ValidationError(`Invalid policy: ${(e as Error).message}`);
  }
  const policyFile = `${INSIDE.host}/policy.json`;
  const egress = inputs.egressSocket;
  const commands = inputs.commandsFile
    ? `${INSIDE.commands}/${basename(inputs.commandsFile)}`
    : undefined;
  return narrowedServerArgv({
    deno: INSIDE.deno,
    packageDir: inputs.source.dir ?? undefined,
    policy: compiled,
    root: INSIDE.home,
    host: "127.0.0.1",
    stateDir: `${INSIDE.run}/state`,
    commandsFile: commands,
    policyFile,
    cachedOnly: true,
    abstractSockets: true,
    // The permissions name the container's PATH and Deno, never the host's.
    inside: { path: inputs.path, denoDir: inputs.denoDir },
    // The relay's own permissions on top of the server's: its socket (and the egress
    // proxy's), its key.
    denoFlags: [
      "--preload",
      inputs.source.module("sdk/providers/local/relay.ts"),
      `--allow-net=unix:${inputs.channelSocket}${egress ? `,unix:${egress}` : ""}`,
      `--allow-read=${INSIDE.host}/sock,${RELAY_KEY_INSIDE}${egress ? `,${egress}` : ""}`,
      `--allow-write=${INSIDE.host}/sock,${RELAY_KEY_INSIDE}${egress ? `,${egress}` : ""}`,
    ],
    serverArgs: [
      "--root",
      INSIDE.home,
      "--policy",
      policyFile,
      ...(commands ? ["--commands", commands] : []),
      "--port",
      "9000",
      "--pty-port",
      "9001",
      // Where the kernel keeps the container's processes from them (`server/serve.ts`); the
      // relays map the host's 9000 and 9001 to them (`shared/listen_targets.ts`).
      "--abstract-sockets",
    ],
  });
}

/**
 * The main process's script (`sh -c SCRIPT sandbar-init PROBE SERVER_ARGV…`). It prints one line
 * `sandbar-probe <names>` naming what the image has of what the SDK's capabilities depend on
 * beyond the server (`code`: python3 with ipykernel; `browser`: chromium): found by looking when
 * PROBE is `probe`, or the names PROBE gives as `known:<names>` (`probe_cache.ts`: what the
 * image's first sandbox found).
 */
export const INIT_SCRIPT = `
H=${INSIDE.host}
probe=$1
shift
mkdir -p ${INSIDE.run}/state ${INSIDE.home} /tmp
(
  found=""
  if [ "$probe" != probe ]; then
    found=" \${probe#known:}"
  else
    if command -v python3 >/dev/null 2>&1 && python3 -c 'import importlib.util as u, sys
sys.exit(u.find_spec("ipykernel") is None)' >/dev/null 2>&1; then
      found="$found code"
    fi
    if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
      found="$found browser"
    fi
  fi
  echo "sandbar-probe$found"
  while :; do
    end=0; read -r end < "$H/end_at"
    now=$(date +%s) || now=0
    [ "$now" -lt "$end" ] || break
    sleep 1
  done
  echo "sandbar-lifetime-ended"
  kill -KILL -1
) </dev/null &
read -r SVC_SERVER_TOKEN && read -r ${ACCESS_TOKEN_ENV} && read -r key || {
  echo "sandbar: no tokens on stdin" >&2
  exit 1
}
(umask 077 && echo "$key" > ${RELAY_KEY_INSIDE}) || exit 1
key=
SVC_SERVER_TOKEN="$SVC_SERVER_TOKEN" ${ACCESS_TOKEN_ENV}="$${ACCESS_TOKEN_ENV}" exec "$@" </dev/null
`;

/** Inputs of {@linkcode containerBody}. */
export interface ContainerInputs {
  /** The image. */
  image: string;
  /** Labels. */
  labels: Record<string, string>;
  /** The sandbox's environment (without the tokens). */
  env: Record<string, string>;
  /** The server's argv. */
  server: string[];
  /** The package. */
  source: PackageSource;
  /** Deno's cache directory on the host. */
  denoDir: string;
  /** The sandbox's host directory (bound read-only at `/run/sandbar-host`). */
  hostDir: string;
  /** A named-commands file on the host. */
  commandsFile?: string;
  /** Named volumes: volume name to the path inside. */
  volumes: Record<string, string>;
  /** CPU cores. */
  cpu?: number;
  /** Memory in MB (swap none beyond it). */
  memory?: number;
  /** Most processes at once. */
  pids?: number;
  /** Disk in MB (needs a storage driver that caps it). */
  disk?: number;
  /** The sandbox's egress CA directory on the host (with secrets), bound read-only inside. */
  egressCaDir?: string;
  /**
   * The caches prepared for the package, as the container's own links to them
   * (`module_cache.ts`, `linkModuleCache`): made the container's `DENO_DIR`.
   */
  moduleCache?: string;
  /** What the image has (`code`, `browser`) when known (`probe_cache.ts`); else the script looks. */
  probed?: string[];
}

/**
 * `DENO_DIR` at the host's path, read-only: the package's parts of the host's cache
 * (`packageCacheDirs`), over the caches `prepared` for the package (`module_cache.ts`), whose
 * empty directories at those paths are where the engine mounts them (it mounts a parent before
 * what is below it, and cannot make a directory in a read-only mount). Never the host's whole
 * `DENO_DIR`, which holds its other programs' code, nor the journals of its live databases.
 */
function denoDirBinds(
  denoDir: string,
  source: PackageSource,
  prepared: string | undefined,
): string[] {
  const isDir = (path: string) => {
    try {
      return Deno.statSync(path).isDirectory;
    } catch {
      return false;
    }
  };
  const dirs = packageCacheDirs(source, denoDir).filter((d) =>
    isDir(join(denoDir, d)) && (!prepared || isDir(join(prepared, d)))
  );
  return [
    ...(prepared ? [`${prepared}:${denoDir}:ro`] : []),
    ...dirs.map((d) => `${join(denoDir, d)}:${join(denoDir, d)}:ro`),
  ];
}

/** The engine's `POST /containers/create` body. */
export function containerBody(inputs: ContainerInputs): Record<string, unknown> {
  const binds = [
    `${Deno.execPath()}:${INSIDE.deno}:ro`,
    ...(inputs.source.dir ? [`${inputs.source.dir}:${inputs.source.dir}:ro`] : []),
    ...denoDirBinds(inputs.denoDir, inputs.source, inputs.moduleCache),
    `${inputs.hostDir}:${INSIDE.host}:ro`,
    ...(inputs.commandsFile ? [`${dirname(inputs.commandsFile)}:${INSIDE.commands}:ro`] : []),
    ...(inputs.egressCaDir ? [`${inputs.egressCaDir}:${EGRESS_CA_INSIDE}:ro`] : []),
    ...Object.entries(inputs.volumes).map(([name, path]) => `${name}:${path}`),
  ];
  const hostConfig: Record<string, unknown> = {
    Init: true,
    AutoRemove: true,
    NetworkMode: "none",
    Binds: binds,
    Tmpfs: { [INSIDE.run]: "rw,mode=0700" },
  };
  if (inputs.cpu !== undefined) hostConfig.NanoCpus = Math.round(inputs.cpu * 1e9);
  if (inputs.memory !== undefined) {
    hostConfig.Memory = inputs.memory * 1024 * 1024;
    hostConfig.MemorySwap = inputs.memory * 1024 * 1024; // the same: no swap beyond it
  }
  if (inputs.pids !== undefined) hostConfig.PidsLimit = inputs.pids;
  if (inputs.disk !== undefined) hostConfig.StorageOpt = { size: `${inputs.disk}M` };
  return {
    Image: inputs.image,
    Hostname: "sandbox",
    WorkingDir: INSIDE.home,
    Labels: inputs.labels,
    Env: Object.entries(inputs.env).map(([k, v]) => `${k}=${v}`),
    Entrypoint: [
      "/bin/sh",
      "-c",
      INIT_SCRIPT,
      "sandbar-init",
      inputs.probed ? `known:${inputs.probed.join(" ")}` : "probe",
    ],
    Cmd: inputs.server,
    // The tokens come on stdin, once (`StdinOnce`: the engine closes it when the provider's
    // attach ends its side).
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    OpenStdin: true,
    StdinOnce: true,
    HostConfig: hostConfig,
  };
}
