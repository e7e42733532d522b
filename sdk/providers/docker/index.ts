/**
 * The `docker` provider: a sandbox is a container of a Docker engine (or Podman's compatible
 * service), reached over `DOCKER_HOST` (a Unix socket by default; `tcp://` on this machine).
 * Templates are images; the in-sandbox server runs in any glibc image from this host's Deno and
 * this package, bound read-only (`launch.ts`); the SDK reaches it through a relay and a Unix
 * socket bound read-only into the container (`channel.ts`). Everything `list` and `connect`
 * need is in the container's labels: no state of its own to lose. See `docs/sdk/providers.md`.
 *
 * @module
 */

import { join } from "node:path";
import type { NetworkConfig } from "../../../server/egress/rules.ts";
import type { AuditEntry } from "../../../server/pipeline/audit.ts";
import {
  ProviderFeatureNotSupportedError,
  SandboxError,
  SandboxNotFoundError,
  TimeoutError,
  ValidationError,
} from "../../errors/mod.ts";
import type { SandboxEvent, SandboxInfo, SandboxMetrics } from "../../models/sandbox.ts";
import { newSandboxId, newSandboxToken } from "../ids.ts";
import { placeholderEnvs, withPlaceholders } from "../secret_placeholders.ts";
import { capabilityNames } from "../../../shared/capability_names.ts";
import { denoDir } from "../local/launch.ts";
import { cacheSandboxModules, packageSource } from "../local/package_source.ts";
import { linkModuleCache, packageCacheDirs, warmModuleCache } from "../local/module_cache.ts";
import { removeTree, sandbarHome, writeAtomic } from "../local/state.ts";
import type {
  PortAddress,
  ProviderCreateRequest,
  ProviderListQuery,
  SandboxHandle,
  SandboxProvider,
} from "../types.ts";
import { DockerChannel, newSocketName } from "./channel.ts";
import { CHANNEL_ENV } from "../local/channel.ts";
import { randomHex } from "../local/relay_dials.ts";
import { LISTEN_TARGETS_ENV, LISTEN_TARGETS_FILE } from "../../../shared/listen_targets.ts";
import {
  EGRESS_CA_DIR,
  EGRESS_LABEL,
  EGRESS_SOCKET,
  keeperAudit,
  keeperDir,
  startKeeper,
  stopKeeper,
  updateKeeper,
  watchKeeper,
} from "./egress.ts";
import { egressEnvironment } from "./egress_env.ts";
import { Engine, engineAddress, EngineError, engineIsLocal } from "./engine.ts";
import {
  ACCESS_TOKEN_ENV,
  containerBody,
  containerPath,
  INSIDE,
  policyFor,
  RELAY_KEY_INSIDE,
  serverArgv,
} from "./launch.ts";
import type { GatewayRefusal } from "../local/gateway.ts";
import { probeEntry, pruneProbes, readProbe, writeProbe } from "./probe_cache.ts";
import { Startup } from "./startup.ts";

/** Options of {@linkcode DockerProvider}. */
export interface DockerProviderOptions {
  /** The engine (`unix:///…` or `tcp://host:port`); default `DOCKER_HOST`, else the usual socket. */
  host?: string;
  /** Where sandboxes' host directories live; default `$SANDBAR_HOME`, else `~/.local/state/sandbar`. */
  home?: string;
  /**
   * Called as each step of a create ends, with the new sandbox's id (for timing where a create's
   * time goes: `scripts/bench/sandbox.ts --only docker` prints the medians). It must not throw.
   */
  onCreateStep?: (step: DockerCreateStep, sandboxId: string) => void;
}

/**
 * The steps of a docker sandbox's create, in the order they usually end (`probed`, `relay` and
 * `listening` come from the container as it starts, so they may come before `started`).
 *
 * | step        | ended when                                                                  |
 * | ----------- | --------------------------------------------------------------------------- |
 * | `prepared`  | the image is checked and the host directory, policy and caches are ready     |
 * | `created`   | the engine's `POST /containers/create` answered                              |
 * | `attached`  | the attach to the container is open and the tokens are written on its stdin  |
 * | `started`   | the engine's `POST /containers/{id}/start` answered                          |
 * | `probed`    | the start script's line naming what the image has arrived                    |
 * | `relay`     | the relay preloaded into the server connected to this process's socket       |
 * | `listening` | the server's listening line arrived                                          |
 * | `checked`   | the capability names are known (create returns next): from the listening line, or the server's `/capabilities` through the relay where the line gave none |
 */
export type DockerCreateStep =
  | "prepared"
  | "created"
  | "attached"
  | "started"
  | "probed"
  | "relay"
  | "listening"
  | "checked";

const RESERVED_ENV = /^(SVC_SERVER_TOKEN|SANDBAR_.*|DENO_DIR)$/;
const DEFAULT_START_TIMEOUT = 60;
/** An image reference as the engine takes it (`name[:tag]`, with an optional registry part). */
const IMAGE_REF = /^[a-z0-9][a-z0-9._/:-]{0,254}(@sha256:[0-9a-f]{64})?$/;
const LABEL = "sandbar.id";

/** The container's name of a sandbox. */
export function containerName(id: string): string {
  return `sandbar-${id}`;
}

interface ContainerJson {
  Id: string;
  State: { Status: string; Running: boolean; Paused: boolean };
  Config: { Labels: Record<string, string> | null };
}

/** What the labels of a sandbox's container say. */
interface Labeled {
  id: string;
  container: string;
  status: string;
  labels: Record<string, string>;
}

/** The server's record of its abstract sockets, inside (in its state directory). */
const LISTEN_TARGETS_INSIDE = `${INSIDE.run}/state/${LISTEN_TARGETS_FILE}`;

/** `SANDBAR_ABSTRACT_SOCKETS` as this process has it, for the server (tests of TCP). */
function abstractSocketsSwitch(): Record<string, string> {
  const value = Deno.env.get("SANDBAR_ABSTRACT_SOCKETS");
  return value === undefined ? {} : { SANDBAR_ABSTRACT_SOCKETS: value };
}

/** The relay's command line and environment inside, for every process that connects. */
function relayPlan(): { argv: string[]; env: string[] } {
  const source = packageSource();
  return {
    argv: [
      INSIDE.deno,
      "run",
      "--no-config",
      "--no-lock",
      "--no-prompt",
      `--allow-read=${INSIDE.host}/sock,${LISTEN_TARGETS_INSIDE}`,
      `--allow-write=${INSIDE.host}/sock`,
      `--allow-env=${LISTEN_TARGETS_ENV}`,
      "--allow-ffi",
      ...source.runFlags,
      source.module("sdk/providers/docker/relay.ts"),
    ],
    // Deno's cache as the server has it, read-only: a writable one inside could be given a
    // planted compiled module by code in the sandbox, and the relay carries every request.
    // Where the server recorded its abstract sockets (`shared/listen_targets.ts`).
    env: [
      `DENO_DIR=${denoDir()}`,
      "DENO_NO_UPDATE_CHECK=1",
      `${LISTEN_TARGETS_ENV}=${LISTEN_TARGETS_INSIDE}`,
    ],
  };
}

/** Channels this process has opened, by sandbox id (one relay per process and sandbox). */
const CHANNELS = new Map<string, Promise<DockerChannel>>();
/** Egress keepers this process is starting, by sandbox id (until its create ends). */
const STARTING_KEEPERS = new Map<string, Promise<void>>();
/** Sandboxes this process paused (its gateways refuse requests meanwhile). */
const PAUSED = new Set<string>();

/**
 * The docker provider.
 *
 * @example
 * ```ts ignore
 * import { DockerProvider, Sandbox } from "@sandbar/sandbar";
 * await using sandbox = await Sandbox.create("python:3.12-slim", {
 *   provider: new DockerProvider({ host: "unix:///var/run/docker.sock" }),
 * });
 * ```
 */
export class DockerProvider implements SandboxProvider {
  /** `docker`. */
  readonly name = "docker";
  /** The engine's client. */
  readonly engine: Engine;
  /** Where sandboxes' host directories live. */
  readonly home: string;
  readonly #sandbarHome: string;
  readonly #onStep: (step: DockerCreateStep, sandboxId: string) => void;

  /** Make the provider (nothing is contacted until a call). */
  constructor(options: DockerProviderOptions = {}) {
    const host = options.host ?? Deno.env.get("DOCKER_HOST") ?? "unix:///var/run/docker.sock";
    this.engine = new Engine(engineAddress(host));
    this.#sandbarHome = options.home ?? sandbarHome();
    this.home = join(this.#sandbarHome, "docker");
    this.#onStep = options.onCreateStep ?? (() => {});
  }

  #requireLocal(): void {
    if (!engineIsLocal(this.engine.address)) {
      throw new ProviderFeatureNotSupportedError(
        `The docker provider reaches a sandbox's server through a Unix socket bound into the ` +
          `container from this machine; the engine at ${this.engine.describe()} is on another ` +
          "machine",
        {
          suggestion: "Use an engine on this machine (a Unix socket, or tcp:// on a loopback " +
            "address), or run the SDK on the engine's machine.",
        },
      );
    }
  }

  /** Create a sandbox from an image and return once its server answers. */
  async create(request: ProviderCreateRequest): Promise<SandboxHandle> {
    if (request.gpu !== undefined) {
      throw new ProviderFeatureNotSupportedError("The docker provider cannot attach a GPU yet", {
        suggestion: "Leave out `gpu`.",
      });
    }
    if (request.isolation !== undefined) {
      throw new ProviderFeatureNotSupportedError(
        "isolation: the docker provider's isolation is the container's; it takes no `isolation`",
        { suggestion: "Leave out `isolation` (it is the local provider's)." },
      );
    }
    if (!IMAGE_REF.test(request.template)) {
      throw new ValidationError(`template "${request.template}" is not an image reference`, {
        suggestion: 'Name a local image, for example "debian:bookworm" or one built with ' +
          "buildTemplate().",
      });
    }
    for (const name of Object.keys(request.envs)) {
      if (RESERVED_ENV.test(name)) throw new ValidationError(`envs: ${name} is reserved`);
    }
    const volumes = request.volumes ?? {};
    for (const [name, path] of Object.entries(volumes)) {
      if (
        !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(name) || !path.startsWith("/") || path.includes(":")
      ) {
        throw new ValidationError(
          `volumes: "${name}" -> "${path}" must map a volume name to an absolute path`,
        );
      }
    }
    this.#requireLocal();
    const image = await this.engine.call<
      { Id: string; Config: { User?: string; Env?: string[] | null } } | null
    >(
      "GET",
      `/images/${encodeURIComponent(request.template)}/json`,
      { accept: [404] },
    );
    if (!image) {
      throw new ValidationError(`No image "${request.template}" on the engine`, {
        suggestion: "Build it (buildTemplate), pull it with the engine, or name a local image.",
      });
    }
    const user = image.Config.User ?? "";
    if (user !== "" && !/^(root|0)(:(root|0))?$/.test(user)) {
      throw new ProviderFeatureNotSupportedError(
        `Image ${request.template} runs as user "${user}"; not supported yet`,
        { suggestion: "Use an image whose USER is root (the sandbox's processes run as it)." },
      );
    }
    const id = newSandboxId();
    const hostDir = join(this.home, id);
    // With `network`: its egress keeper's directory (outside the container).
    const egressDir = request.network ? keeperDir(this.#sandbarHome, id) : undefined;
    await Deno.mkdir(join(hostDir, "sock"), { recursive: true, mode: 0o755 });
    await Deno.chmod(hostDir, 0o755);
    try {
      return await this.#start(request, image, id, hostDir, volumes, egressDir);
    } catch (e) {
      // As kill does: a container that ended by itself is being removed by the engine
      // (`AutoRemove`, a 409 here), and is waited for, so that nothing is left when this throws.
      await this.#remove(id, { "sandbar.host-dir": hostDir }).catch(() => {});
      if (egressDir) {
        await STARTING_KEEPERS.get(id)?.catch(() => {});
        await stopKeeper(egressDir).catch(() => {});
      }
      await removeTree(hostDir).catch(() => {});
      throw await this.#explained(e);
    } finally {
      STARTING_KEEPERS.delete(id);
    }
  }

  async #start(
    request: ProviderCreateRequest,
    image: { Id: string; Config: { Env?: string[] | null } },
    id: string,
    hostDir: string,
    volumes: Record<string, string>,
    egressDir: string | undefined,
  ): Promise<SandboxHandle> {
    const source = packageSource();
    const cache = denoDir();
    const serverToken = newSandboxToken();
    const accessToken = newSandboxToken();
    const commandsFile = request.commandsFile
      ? await Deno.realPath(request.commandsFile).catch(() => {
        throw new ValidationError(`commandsFile ${request.commandsFile} does not exist`);
      })
      : undefined;
    const policy = policyFor(request.policy, source, cache);
    if (request.policy !== undefined) await validatePolicy(policy);
    // Each secret's variable holds a placeholder inside; the value stays in the egress keeper.
    const network = withPlaceholders(request.network);
    const envs = placeholderEnvs(request.envs, network, RESERVED_ENV);
    const env: Record<string, string> = {
      HOME: INSIDE.home,
      LANG: "C.UTF-8",
      TMPDIR: "/tmp",
      DENO_DIR: cache,
      DENO_NO_UPDATE_CHECK: "1",
      SANDBAR_PROC: "open",
      SANDBAR_STATE_DIR: `${INSIDE.run}/state`,
      // TCP instead of abstract sockets, asked for on the host: the server checks the value.
      ...abstractSocketsSwitch(),
      // The container's network is the provider's: none, or the egress proxy alone.
      SANDBAR_EGRESS: "provider",
      ...envs,
      ...(network ? egressEnvironment(network) : {}),
    };
    // This process's socket, made before the container: the relay preloaded into the server
    // connects to it with a one-time key that goes in with the tokens.
    const socketName = newSocketName();
    const channelSocket = `${INSIDE.host}/sock/${socketName}`;
    const relayKey = randomHex(32);
    const egressSocket = network ? `${INSIDE.host}/${EGRESS_SOCKET}` : undefined;
    const server = serverArgv({
      source,
      path: containerPath(env, image.Config.Env),
      denoDir: cache,
      policy,
      env: { ...env, SVC_SERVER_TOKEN: serverToken, [ACCESS_TOKEN_ENV]: accessToken },
      commandsFile,
      channelSocket,
      egressSocket,
    });
    await cacheSandboxModules(source, cache);
    // From a checkout: the modules' transpiled JavaScript into the cache the container mounts
    // read-only, so that the server does not transpile its modules at every start.
    const prepared = await warmModuleCache(source, cache, this.#sandbarHome);
    // The container's own links to them: whatever becomes of the package's snapshots while it
    // lives (`linkModuleCache`).
    const moduleCache = prepared === null ? undefined : await linkModuleCache(
      prepared,
      join(hostDir, "deno-dir"),
      packageCacheDirs(source, cache),
    );
    // What the image has, when one of its sandboxes looked before (the start script then does not).
    const probeAt = probeEntry(this.#sandbarHome, image.Id, request.envs, volumes);
    const probed = probeAt ? await readProbe(probeAt) : null;
    const now = Date.now();
    const endAt = now + request.timeout * 1000;
    await writeAtomic(join(hostDir, "policy.json"), JSON.stringify(policy, null, 2), 0o644);
    await writeAtomic(join(hostDir, "end_at"), `${Math.floor(endAt / 1000)}\n`, 0o644);
    const relay = relayPlan();
    const labels: Record<string, string> = {
      [LABEL]: id,
      "sandbar.template": request.template,
      "sandbar.created": new Date(now).toISOString(),
      "sandbar.end": new Date(endAt).toISOString(),
      "sandbar.metadata": JSON.stringify(request.metadata),
      "sandbar.resources": JSON.stringify({
        cpu: request.cpu ?? null,
        memory: request.memory ?? null,
        disk: request.disk ?? null,
        pids: request.pids ?? null,
      }),
      "sandbar.secure": request.secure ? "1" : "0",
      "sandbar.server-token": serverToken,
      "sandbar.access-token": accessToken,
      "sandbar.gateway-token": newSandboxToken(),
      "sandbar.host-dir": hostDir,
      "sandbar.relay": JSON.stringify(relay),
      "sandbar.server-command": JSON.stringify([
        INSIDE.deno,
        "run",
        "-A",
        ...source.runFlags,
        source.module("server/main.ts"),
      ]),
    };
    const name = containerName(id);
    const step = (s: DockerCreateStep) => this.#onStep(s, id);
    if (egressDir && network) {
      // Started beside the container, ready before create returns: the relay's bridge dials
      // its socket only when something inside reaches out. The engine binds the CA directory,
      // so that is made now; the keeper writes the certificates into it.
      if (network.secrets?.length) {
        await Deno.mkdir(join(hostDir, EGRESS_CA_DIR), { mode: 0o755 });
      }
      const keeper = startKeeper(egressDir, {
        id,
        engine: this.engine.describe(),
        container: name,
        network,
        socket: join(hostDir, EGRESS_SOCKET),
        caDir: join(hostDir, EGRESS_CA_DIR),
        startTimeoutMs: ((request.requestTimeout ?? DEFAULT_START_TIMEOUT) + 60) * 1000,
      }, source);
      keeper.catch(() => {});
      STARTING_KEEPERS.set(id, keeper);
      labels[EGRESS_LABEL] = egressDir;
    }
    const body = containerBody({
      // By id: the image checked above and whose probe is kept, even if its name moves meanwhile.
      image: image.Id,
      probed: probed ?? undefined,
      labels,
      // Where the preloaded relay finds its socket and key (it removes them before the server
      // loads), and that the server goes on when this process's channel ends.
      env: {
        ...env,
        [CHANNEL_ENV.socket]: channelSocket,
        [CHANNEL_ENV.key]: RELAY_KEY_INSIDE,
        [CHANNEL_ENV.keep]: "1",
        // With `network`, the relay is the egress bridge too (127.0.0.1:3128 to the proxy).
        ...(egressSocket ? { [CHANNEL_ENV.egress]: egressSocket } : {}),
      },
      server,
      source,
      denoDir: cache,
      moduleCache,
      hostDir,
      commandsFile,
      volumes,
      cpu: request.cpu,
      memory: request.memory,
      pids: request.pids,
      disk: request.disk,
      egressCaDir: network?.secrets?.length ? join(hostDir, EGRESS_CA_DIR) : undefined,
    });
    step("prepared");
    try {
      await this.engine.call("POST", "/containers/create", { query: { name }, body });
    } catch (e) {
      if (
        request.disk !== undefined && e instanceof EngineError &&
        /storage-opt|StorageOpt|quota/i.test(e.message)
      ) {
        throw new ProviderFeatureNotSupportedError(
          `disk: the engine's storage driver cannot cap a container's disk here (${e.message})`,
          {
            suggestion: "Leave out `disk`, or run the engine on a storage driver that caps it " +
              "(overlay2 on xfs with pquota, btrfs, zfs).",
          },
        );
      }
      throw e;
    }
    step("created");
    const secure = labels["sandbar.secure"] === "1";
    const { channel, ready } = DockerChannel.listen(
      join(hostDir, "sock", socketName),
      relayKey,
      {
        sandboxId: id,
        accessToken: secure ? accessToken : null,
        gatewayToken: secure ? labels["sandbar.gateway-token"] : null,
        refuse: () => this.#refusal(id),
      },
    );
    CHANNELS.set(id, ready);
    ready.then(() => step("relay"), () => CHANNELS.delete(id));
    let startup: Startup | undefined;
    let pruning: Promise<void> | undefined;
    try {
      startup = await Startup.attach(this.engine, name, step);
      await startup.sendTokens(serverToken, accessToken, relayKey);
      step("attached");
      await this.engine.call("POST", `/containers/${name}/start`, { accept: [304] });
      step("started");
      // The probe cache grows by this image's entry: the entries of images the engine no longer
      // has go, while the server starts (`probe_cache.ts`).
      if (probeAt && !probed) pruning = this.#pruneProbes();
      const deadline = Date.now() + (request.requestTimeout ?? DEFAULT_START_TIMEOUT) * 1000;
      // The relay connects before the server loads; the container's end fails both. The
      // keeper, once ready, waits on the container from now, ending with it.
      const keeper = STARTING_KEEPERS.get(id);
      const [, found] = await Promise.all([
        ready,
        startup.wait(id, deadline),
        keeper && egressDir ? keeper.then(() => watchKeeper(egressDir, id)) : null,
      ]);
      if (probeAt && !probed) await writeProbe(probeAt, found.has);
      return await this.#handle(id, labels, "running", deadline, startup, () => step("checked"));
    } catch (e) {
      // Not connected yet: nothing else would close the socket (create's cleanup closes a
      // channel that is in).
      channel.close();
      throw e;
    } finally {
      startup?.close();
      await pruning;
    }
  }

  /** Remove the probe cache's entries of images the engine does not have (never rejects). */
  async #pruneProbes(): Promise<void> {
    try {
      const images = await this.engine.call<{ Id: string }[]>("GET", "/images/json", {
        query: { all: true },
      });
      await pruneProbes(this.#sandbarHome, images.map((image) => image.Id));
    } catch { /* best effort: pruned at the next growth */ }
  }

  async #inspect(id: string): Promise<Labeled | null> {
    if (!/^[a-z0-9]{1,64}$/.test(id)) return null;
    const c = await this.engine.call<ContainerJson | null>(
      "GET",
      `/containers/${containerName(id)}/json`,
      { accept: [404] },
    );
    const labels = c?.Config.Labels ?? {};
    if (!c || labels[LABEL] !== id) return null;
    return { id, container: c.Id, status: c.State.Status, labels };
  }

  /** A live sandbox's labels; expired ones are removed here (the host's half of the lifetime). */
  async #live(id: string): Promise<Labeled> {
    const found = await this.#inspect(id);
    if (found && await isLive(found)) return found;
    // Past its end: the container's own watch ends it; if something inside stopped the watch,
    // the host ends it here, at the next call that looks.
    if (found && isRunning(found)) await this.#remove(id, found.labels);
    throw new SandboxNotFoundError(`Sandbox ${id} not found (killed, or its timeout ran out)`);
  }

  async #handle(
    id: string,
    labels: Record<string, string>,
    status: string,
    deadline: number,
    startup?: Startup,
    checked?: () => void,
  ): Promise<SandboxHandle> {
    const channel = await this.#channel(id, labels, deadline);
    const secure = labels["sandbar.secure"] === "1";
    const serverToken = labels["sandbar.server-token"];
    const portAddress = (port: number, ws = false): PortAddress => {
      const listener = channel.gateways[ws ? 1 : 0].port;
      const prefix = port === (ws ? 9001 : 9000) ? "" : `/_port/${port}`;
      const headers: Record<string, string> = {};
      if (secure) headers["X-Sandbar-Gateway"] = labels["sandbar.gateway-token"];
      return { url: `${ws ? "ws" : "http"}://127.0.0.1:${listener}${prefix}`, headers };
    };
    const capabilities = await this.#capabilities(
      id,
      portAddress(9000),
      serverToken,
      deadline,
      startup,
    );
    checked?.();
    const info = await infoOf(id, labels, status, true);
    info.envdUrl = portAddress(9000).url;
    return {
      info,
      secure,
      domain: `localhost:${channel.gateways[0].port}`,
      scheme: "http",
      capabilities,
      serverToken,
      portAddress,
      serverCommand: JSON.parse(labels["sandbar.server-command"]),
    };
  }

  #channel(id: string, labels: Record<string, string>, deadline: number): Promise<DockerChannel> {
    const known = CHANNELS.get(id);
    if (known) {
      return known.then((c) => {
        if (c.alive) return c;
        CHANNELS.delete(id);
        return this.#channel(id, labels, deadline);
      });
    }
    const relay = JSON.parse(labels["sandbar.relay"]);
    const secure = labels["sandbar.secure"] === "1";
    const opening = DockerChannel.open({
      engine: this.engine,
      container: containerName(id),
      socketDir: join(labels["sandbar.host-dir"], "sock"),
      socketDirInside: `${INSIDE.host}/sock`,
      relayArgv: relay.argv,
      relayEnv: relay.env,
      sandboxId: id,
      accessToken: secure ? labels["sandbar.access-token"] : null,
      gatewayToken: secure ? labels["sandbar.gateway-token"] : null,
      refuse: () => this.#refusal(id),
    });
    CHANNELS.set(id, opening);
    opening.catch(() => CHANNELS.delete(id));
    return opening;
  }

  /** What this process's gateways answer while it has the sandbox paused, else null. */
  #refusal(id: string): GatewayRefusal | null {
    return PAUSED.has(id)
      ? {
        status: 409,
        code: "sandbox_paused",
        message: `Sandbox ${id} is paused; call resume() first`,
      }
      : null;
  }

  /**
   * The capability names: the server's, less what the image lacks. A new sandbox's `startup`
   * says when its server listens, its names and what the image has; another process's connect
   * asks the server for its document at once and reads the image's probe from the container's
   * log.
   */
  async #capabilities(
    id: string,
    address: PortAddress,
    serverToken: string,
    deadline: number,
    startup?: Startup,
  ): Promise<string[]> {
    const headers = { ...address.headers, authorization: `Bearer ${serverToken}` };
    const started = await startup?.wait(id, deadline);
    const named = async (said: string[]) => {
      const names = new Set([...said, "ports"]);
      const found = started?.has ?? await this.#probe(id);
      for (const needs of ["code", "browser"]) if (!found.has(needs)) names.delete(needs);
      return [...names].sort();
    };
    if (started?.capabilities) return named(started.capabilities);
    let last = "";
    while (true) {
      try {
        const res = await fetch(`${address.url}/capabilities`, { headers });
        if (res.ok) return named(capabilityNames(await res.json()));
        last = `${res.status} ${(await res.text()).slice(0, 300)}`;
      } catch (e) {
        last = (e as Error).message;
      }
      const state = await this.#inspect(id);
      if (!state || state.status === "exited" || state.status === "dead") {
        throw new SandboxError(`The docker sandbox did not start: ${await this.#logs(id)}`.trim(), {
          suggestion: "The image needs glibc and /bin/sh; the message ends with what it printed.",
        });
      }
      if (Date.now() > deadline) {
        throw new TimeoutError(`Sandbox ${id}'s server did not answer in time (${last})`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** What the init script found in the image (`code`, `browser`), from the container's log. */
  async #probe(id: string): Promise<Set<string>> {
    for (let i = 0; i < 100; i++) {
      const line = (await this.#logs(id)).split("\n").find((l) => l.startsWith("sandbar-probe"));
      if (line !== undefined) return new Set(line.split(" ").slice(1));
      await new Promise((r) => setTimeout(r, 50));
    }
    return new Set();
  }

  async #logs(id: string): Promise<string> {
    return (await this.engine.logs(containerName(id), 200)).slice(-4000);
  }

  /** The sandbox's info and addresses (opens this process's relay into it). */
  async connect(sandboxId: string): Promise<SandboxHandle> {
    this.#requireLocal();
    const found = await this.#live(sandboxId);
    return await this.#handle(
      sandboxId,
      found.labels,
      found.status,
      Date.now() + DEFAULT_START_TIMEOUT * 1000,
    );
  }

  /** The sandbox's info now. */
  async getInfo(sandboxId: string): Promise<SandboxInfo> {
    const found = await this.#live(sandboxId);
    if (found.status === "paused") PAUSED.add(sandboxId);
    else PAUSED.delete(sandboxId);
    const info = await infoOf(sandboxId, found.labels, found.status, true);
    const channel = await CHANNELS.get(sandboxId)?.catch(() => null);
    if (channel) info.envdUrl = `http://127.0.0.1:${channel.gateways[0].port}`;
    return info;
  }

  /** Live sandboxes of this engine, oldest first; access tokens left out. */
  async list(query: ProviderListQuery): Promise<SandboxInfo[]> {
    const containers = await this.engine.call<
      { Id: string; State: string; Labels: Record<string, string> }[]
    >("GET", "/containers/json", {
      query: { all: true, filters: JSON.stringify({ label: [LABEL] }) },
    });
    const found: SandboxInfo[] = [];
    for (const c of containers) {
      if (!["running", "paused", "created"].includes(c.State)) continue;
      const info = await infoOf(c.Labels[LABEL], c.Labels, c.State, false);
      if (info.endAt && info.endAt.getTime() + 5000 < Date.now()) {
        await this.#remove(c.Labels[LABEL], c.Labels);
        continue;
      }
      if (query.status && info.status !== query.status) continue;
      found.push(info);
    }
    found.sort((a, b) =>
      a.startedAt!.getTime() - b.startedAt!.getTime() || a.sandboxId.localeCompare(b.sandboxId)
    );
    return found.slice(query.offset, query.offset + query.limit);
  }

  async #remove(id: string, labels: Record<string, string>): Promise<void> {
    CHANNELS.get(id)?.then((c) => c.close()).catch(() => {});
    CHANNELS.delete(id);
    PAUSED.delete(id);
    const res = await this.engine.fetch("DELETE", `/containers/${containerName(id)}`, {
      query: { force: true, v: true },
      accept: [404, 409],
    });
    await res.body?.cancel();
    // 409: the engine is already removing it (its lifetime ended); wait until it is gone.
    for (let i = 0; i < 100 && res.status === 409 && (await this.#inspect(id)); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    // Its egress keeper ends itself when the container ends; here it is gone when kill returns.
    const keeper = keeperOf(id, labels);
    if (keeper) await stopKeeper(keeper).catch(() => {});
    // The host directory the labels name, only where this provider's homes keep them.
    const dir = labels["sandbar.host-dir"];
    if (dir && dir.endsWith(`/docker/${id}`)) await removeTree(dir).catch(() => {});
  }

  /**
   * Destroy a sandbox: its container, its anonymous volumes, its host directory. True when it
   * was live; a sandbox whose lifetime had already ended (its container exited, or being removed
   * by the engine) answers false, as one that is gone does, though what is left of it is removed
   * too.
   */
  async kill(sandboxId: string): Promise<boolean> {
    const found = await this.#inspect(sandboxId);
    if (!found) return false;
    const live = await isLive(found);
    await this.#remove(sandboxId, found.labels);
    return live;
  }

  /** Make the lifetime end `timeout` seconds from now. */
  async setTimeout(sandboxId: string, timeout: number): Promise<void> {
    const found = await this.#live(sandboxId);
    const end = Math.floor(Date.now() / 1000) + timeout;
    await writeAtomic(join(found.labels["sandbar.host-dir"], "end_at"), `${end}\n`, 0o644);
  }

  /** Freeze every process of the sandbox (the engine's pause); its lifetime keeps counting. */
  async pause(sandboxId: string): Promise<void> {
    await this.#live(sandboxId);
    const res = await this.engine.fetch("POST", `/containers/${containerName(sandboxId)}/pause`, {
      accept: [409],
    });
    await res.body?.cancel();
    PAUSED.add(sandboxId);
  }

  /** Thaw a paused sandbox. */
  async resume(sandboxId: string): Promise<void> {
    await this.#live(sandboxId);
    const res = await this.engine.fetch("POST", `/containers/${containerName(sandboxId)}/unpause`, {
      accept: [409],
    });
    await res.body?.cancel();
    PAUSED.delete(sandboxId);
  }

  /**
   * Save the sandbox's file system as an image named `name` (the engine's commit, the sandbox
   * paused meanwhile); `create(name)` then starts from it. Mounted volumes are not in it.
   */
  async snapshot(sandboxId: string, name: string): Promise<string> {
    if (!IMAGE_REF.test(name) || name.includes("@")) {
      throw new ValidationError(`snapshot name "${name}" is not an image name`, {
        suggestion: 'Use lower-case letters, digits, ".", "_", "-", "/" and an optional ":tag".',
      });
    }
    const found = await this.#live(sandboxId);
    const tagAt = name.lastIndexOf(":");
    const [repo, tag] = tagAt > name.lastIndexOf("/")
      ? [name.slice(0, tagAt), name.slice(tagAt + 1)]
      : [name, "latest"];
    await this.engine.call("POST", "/commit", {
      query: { container: found.container, repo, tag, pause: found.status !== "paused" },
      body: { Labels: { "sandbar.snapshot-of": sandboxId } },
    });
    return `${repo}:${tag}`;
  }

  /** The engine's `oom` events of the container since it was made, oldest first. */
  async #oomEvents(found: Labeled): Promise<SandboxEvent[]> {
    const since = Math.floor(Date.parse(found.labels["sandbar.created"]) / 1000);
    const res = await this.engine.fetch("GET", "/events", {
      query: {
        since,
        until: Math.ceil(Date.now() / 1000),
        filters: JSON.stringify({ container: [found.container], event: ["oom"] }),
      },
    });
    return (await res.text()).split("\n").filter((l) => l.trim()).map((l) => {
      const e = JSON.parse(l) as { timeNano?: number; time?: number };
      return {
        type: "oom_kill",
        at: new Date(e.timeNano ? e.timeNano / 1e6 : (e.time ?? 0) * 1000),
        message: "The kernel killed a process of the sandbox for want of memory",
      };
    });
  }

  /** What happened to it: the kernel's OOM kills, from the engine's events. */
  async getEvents(sandboxId: string): Promise<SandboxEvent[]> {
    const found = await this.#live(sandboxId);
    if (await this.engine.product() === "podman") {
      throw new ProviderFeatureNotSupportedError(
        "getEvents: Podman's Docker-compatible service sends no `oom` event when the kernel " +
          "kills a process inside a container that goes on, so the docker provider cannot " +
          "tell when that happened on Podman",
        { suggestion: "getMetrics().oomKills counts them (from the kernel's counter)." },
      );
    }
    return await this.#oomEvents(found);
  }

  /**
   * A create's engine error, with what fixes it where it is a Podman set-up a user can change
   * (Docker's engine has its own init and gives containers its own limits: neither arises there).
   */
  async #explained(e: unknown): Promise<unknown> {
    if (!(e instanceof EngineError)) return e;
    let suggestion: string | undefined;
    if (/container-init binary not found/.test(e.message)) {
      suggestion = "Podman runs the container's init (`Init: true`, under which sandbar's start " +
        "script runs) from catatonit: install it (apt-get install catatonit; Debian's podman " +
        "only recommends it, and tini does not stand in for it).";
    } else if (/error setting rlimit/.test(e.message)) {
      suggestion = "Podman as root gives containers nofile and nproc limits of 1048576 unless " +
        "containers.conf's default_ulimits says otherwise, and this engine may not raise its " +
        "own (no CAP_SYS_RESOURCE, as inside a container): set default_ulimits = " +
        '["nofile=N:N", "nproc=M:M"] to at most the service\'s own limits (/proc/<pid>/limits) ' +
        "and restart it. See docs/sdk/providers.md, Podman.";
    }
    if (!suggestion || await this.engine.product().catch(() => null) !== "podman") return e;
    return new SandboxError(e.message, { suggestion, cause: e });
  }

  /**
   * The kernel's count of OOM kills in the container's memory cgroup (`oom_kill` in cgroup v2's
   * `memory.events`, v1's `memory.oom_control`), read inside through an exec: for Podman,
   * whose events do not carry them. Processes inside cannot change it (the cgroup files are
   * the kernel's, mounted read-only, and the container has no CAP_SYS_ADMIN to mount over them).
   */
  async #kernelOomKills(sandboxId: string, status: string): Promise<number> {
    if (status === "paused") {
      throw new SandboxError(
        `getMetrics: sandbox ${sandboxId} is paused; on Podman its OOM count is read by a ` +
          "command inside, which cannot run while it is frozen",
        { suggestion: "Call resume() first." },
      );
    }
    const read = await this.engine.exec(containerName(sandboxId), [
      "/bin/sh",
      "-c",
      "cat /sys/fs/cgroup/memory.events 2>/dev/null || cat /sys/fs/cgroup/memory/memory.oom_control",
    ]);
    const count = /^oom_kill (\d+)$/m.exec(read.stdout);
    if (read.exitCode !== 0 || !count) {
      throw new SandboxError(
        `getMetrics: the sandbox's memory cgroup gave no oom_kill count (${read.stdout.trim()})`,
      );
    }
    return Number(count[1]);
  }

  /** New network rules for a sandbox created with `network`; how many connections closed. */
  async updateNetwork(sandboxId: string, network: NetworkConfig | false): Promise<number> {
    return await updateKeeper(await this.#keeper(sandboxId), sandboxId, network);
  }

  /** The sandbox's last `limit` egress audit lines. */
  async networkAudit(sandboxId: string, limit: number): Promise<AuditEntry[]> {
    return await keeperAudit(await this.#keeper(sandboxId), sandboxId, limit);
  }

  async #keeper(id: string): Promise<string> {
    const dir = keeperOf(id, (await this.#live(id)).labels);
    if (!dir) {
      throw new SandboxError(
        `Sandbox ${id}: it was created without \`network\`: it has no network to change`,
      );
    }
    return dir;
  }

  /** CPU, memory and process counts now, from the engine's stats. */
  async getMetrics(sandboxId: string): Promise<SandboxMetrics> {
    const found = await this.#live(sandboxId);
    // Two one-shot samples half a second apart: the engine's own "precpu" of a single read
    // is not a recent sample on every engine.
    const path = `/containers/${containerName(sandboxId)}/stats`;
    const sample = () =>
      this.engine.call<DockerStats>("GET", path, { query: { stream: false, "one-shot": true } });
    const first = await sample();
    await new Promise((r) => setTimeout(r, 500));
    const s = await sample();
    const wall = (Date.parse(s.read) - Date.parse(first.read)) * 1e6;
    const cpuDelta = s.cpu_stats.cpu_usage.total_usage - first.cpu_stats.cpu_usage.total_usage;
    const resources = JSON.parse(found.labels["sandbar.resources"] ?? "{}");
    const quota: number | null = resources.cpu ?? null;
    // Cores busy over the interval, as a share of the quota (or of one core when unlimited).
    const cores = wall > 0 ? cpuDelta / wall : 0;
    return {
      timestamp: new Date(s.read),
      cpuCount: quota,
      cpuUsedPct: (cores / (quota ?? 1)) * 100,
      cpuUsedSeconds: s.cpu_stats.cpu_usage.total_usage / 1e9,
      memUsed: s.memory_stats.usage ?? null,
      memTotal: resources.memory ? resources.memory * 1024 * 1024 : null,
      diskUsed: null,
      diskTotal: null,
      processes: s.pids_stats?.current ?? null,
      processLimit: s.pids_stats?.limit ?? resources.pids ?? null,
      oomKills: await this.engine.product() === "podman"
        ? await this.#kernelOomKills(sandboxId, found.status)
        : (await this.#oomEvents(found)).length,
    };
  }
}

interface DockerStats {
  read: string;
  cpu_stats: { cpu_usage: { total_usage: number } };
  memory_stats: { usage?: number; limit?: number; failcnt?: number };
  pids_stats?: { current?: number; limit?: number };
}

/**
 * The egress keeper's directory a sandbox's labels name, only where this provider keeps them
 * for that id (an image committed from another sandbox carries that one's labels).
 */
function keeperOf(id: string, labels: Record<string, string>): string | null {
  const dir = labels[EGRESS_LABEL];
  return dir && dir.endsWith(`/docker-egress/${id}`) ? dir : null;
}

/** Whether the container still runs (paused and just created count). */
function isRunning(found: Labeled): boolean {
  return found.status === "running" || found.status === "paused" || found.status === "created";
}

/**
 * Whether the sandbox is live: its container runs and its end time has not passed (with a
 * little grace, for the container's own watch to end it).
 */
async function isLive(found: Labeled): Promise<boolean> {
  return isRunning(found) && (await endOf(found.labels)).getTime() + 5000 >= Date.now();
}

async function endOf(labels: Record<string, string>): Promise<Date> {
  try {
    const text = await Deno.readTextFile(join(labels["sandbar.host-dir"], "end_at"));
    const seconds = Number(text.trim());
    if (Number.isFinite(seconds) && seconds > 0) return new Date(seconds * 1000);
  } catch { /* not on this machine, or gone: the label's */ }
  return new Date(labels["sandbar.end"]);
}

async function infoOf(
  id: string,
  labels: Record<string, string>,
  status: string,
  withToken: boolean,
): Promise<SandboxInfo> {
  const resources = JSON.parse(labels["sandbar.resources"] ?? "{}");
  return {
    sandboxId: id,
    template: labels["sandbar.template"],
    status: status === "paused"
      ? "paused"
      : status === "running" || status === "created"
      ? "running"
      : "stopped",
    envdUrl: null,
    envdAccessToken: withToken ? labels["sandbar.access-token"] : null,
    metadata: JSON.parse(labels["sandbar.metadata"] ?? "{}"),
    startedAt: new Date(labels["sandbar.created"]),
    endAt: await endOf(labels),
    provider: "docker",
    cpuCount: resources.cpu ?? null,
    memoryMB: resources.memory ?? null,
    diskMB: resources.disk ?? null,
  };
}

/** Check a caller's policy with the server's schema before anything starts. */
async function validatePolicy(policy: Record<string, unknown>): Promise<void> {
  let parsePolicy: typeof import("../../../server/policy/load.ts").parsePolicy;
  try {
    ({ parsePolicy } = await import("../../../server/policy/load.ts"));
  } catch {
    return; // no import map here for its npm packages: the server checks it when it starts
  }
  try {
    parsePolicy(JSON.stringify(policy, null, 2), "policy");
  } catch (e) {
    throw new ValidationError(`Invalid policy: ${(e as Error).message}`, {
      suggestion: "The policy has the server's policy file shape; see the server's README.",
    });
  }
}
