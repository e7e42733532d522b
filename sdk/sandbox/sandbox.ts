/**
 * {@linkcode Sandbox}: create, connect to, list, pause, resume and destroy sandboxes, and use
 * them through the `commands`, `files`, `network` and `code` modules and the typed
 * `ServerClient` of the in-sandbox server.
 *
 * @module
 */

import { ServerClient } from "../client/server_client.ts";
import type { CodeResult } from "../models/devtools.ts";
import type { NamedCommand } from "../models/core.ts";
import {
  ProviderFeatureNotSupportedError,
  SandboxNotFoundError,
  ValidationError,
} from "../errors/mod.ts";
import type {
  SandboxEvent,
  SandboxInfo,
  SandboxMetrics,
  SandboxStatus,
} from "../models/sandbox.ts";
import { CodeModule, type CodeRunOptions } from "./code.ts";
import { CommandsModule } from "./commands.ts";
import { FilesModule } from "./files.ts";
import { NetworkModule } from "./network.ts";
import { resolveProvider } from "../providers/registry.ts";
import type { SandboxHandle, SandboxProvider } from "../providers/types.ts";
import { checkOptions } from "../errors/option_checks.ts";
import { FrozenSet } from "./frozen_set.ts";
import {
  CONNECTION_OPTIONS,
  createRequest,
  credentialsOf,
  lifetime,
  listQuery,
  type SandboxConnectionOptions,
  type SandboxCreateOptions,
  type SandboxListOptions,
} from "./options.ts";
import { startServer, type StartServerOptions } from "./start_server.ts";
import { SandboxTerminal } from "./terminal.ts";
import { requireDeno } from "../errors/deno_only.ts";

/** Options of `sandbox.serverAt`. */
export interface ServerAtOptions {
  /** The server's token (default: the sandbox's own for port 9000, else `SVC_SERVER_TOKEN`). */
  token?: string;
  /** Its PTY port (default 9001). */
  ptyPort?: number;
  /** Per-request timeout in seconds (default 30). */
  timeout?: number;
}

/**
 * The built-in providers (`local`, `docker`) and the environment defaults are Deno's: under
 * another runtime a named provider is refused in one clear error (a provider object given by the
 * caller is its own business).
 */
function needsDeno(provider: unknown): void {
  if (provider === undefined || typeof provider === "string") {
    requireDeno(`Sandbox with the ${provider ?? "default"} provider`);
  }
}

/**
 * A sandbox: an isolated machine for untrusted and agent work, with its own file system,
 * processes and ports, and an in-sandbox server as its data plane.
 *
 * With no provider configured it is a local sandbox: an isolated process tree on this machine
 * (bubblewrap namespaces when `bwrap` is installed, Deno permissions always). See
 * `docs/sdk/sandbox.md`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Sandbox } from "@sandbar/sandbar";
 *
 * await using sandbox = await Sandbox.create(); // killed when the scope ends
 * const r = await sandbox.commands.run("echo hello from $(hostname)");
 * assert.equal(r.stdout, "hello from sandbox\n");
 * await sandbox.files.write("/home/user/data.txt", "42");
 * assert.equal((await sandbox.runCode("print(open('data.txt').read())")).text, "42");
 * ```
 */
export class Sandbox implements AsyncDisposable {
  /** Shell commands. */
  readonly commands: CommandsModule;
  /** The file system. */
  readonly files: FilesModule;
  /** Port addresses. */
  readonly network: NetworkModule;
  /** Code and code contexts (needs the `code` capability). */
  readonly code: CodeModule;

  readonly #provider: SandboxProvider;
  readonly #handle: SandboxHandle;
  readonly #capabilities: ReadonlySet<string>;
  #info: SandboxInfo;
  #server: ServerClient | undefined;
  /** Set by `kill()`: every later data-plane call throws `SandboxNotFoundError` at once. */
  #killed = false;
  readonly #clients = new Set<ServerClient>();

  private constructor(provider: SandboxProvider, handle: SandboxHandle) {
    this.#provider = provider;
    this.#handle = handle;
    this.#info = handle.info;
    this.#capabilities = new FrozenSet(handle.capabilities);
    const ctx = {
      sandboxId: handle.info.sandboxId,
      capabilities: this.#capabilities,
      server: () => this.server,
      oomKilledSince: (since: Date) => this.#oomKilledSince(since),
    };
    this.commands = new CommandsModule(ctx);
    this.files = new FilesModule(ctx, () => this.#address(9000).url);
    this.code = new CodeModule(ctx);
    this.network = new NetworkModule(() => ({
      sandboxId: this.id,
      domain: handle.domain,
      scheme: handle.scheme,
      secure: handle.secure,
      accessToken: this.#info.envdAccessToken,
      provider: provider.name,
      updateNetwork: provider.updateNetwork &&
        ((network) => provider.updateNetwork!(this.id, network)),
      networkAudit: provider.networkAudit && ((limit) => provider.networkAudit!(this.id, limit)),
    }));
  }

  /**
   * Create a sandbox and return once it answers. `timeout` is its lifetime in seconds (default
   * 300, at most 86400): when it passes, the sandbox is killed, whether or not this program
   * still runs.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Sandbox } from "@sandbar/sandbar";
   *
   * await using sandbox = await Sandbox.create("base", { timeout: 600, envs: { MODE: "test" } });
   * assert.equal((await sandbox.commands.run("echo $MODE")).stdout, "test\n");
   * const info = await sandbox.refreshInfo();
   * assert.ok(info.endAt !== null && info.endAt > new Date());
   * ```
   */
  static async create(
    template?: string | SandboxCreateOptions,
    options?: SandboxCreateOptions,
  ): Promise<Sandbox> {
    if (typeof template === "object" && options !== undefined) {
      throw new ValidationError("Sandbox.create: pass the options once, first or second");
    }
    const opts = (typeof template === "object" ? template : options) ?? {};
    needsDeno(opts.provider);
    const name = typeof template === "string" ? template : opts.template ?? "base";
    const request = createRequest(name, opts);
    const provider = resolveProvider(opts.provider, credentialsOf(opts));
    return new Sandbox(provider, await provider.create(request));
  }

  /**
   * Connect to a running (or paused) sandbox by id, from any process. Connecting never changes
   * its lifetime: use `setTimeout` for that.
   */
  static async connect(
    sandboxId: string,
    options: SandboxConnectionOptions = {},
  ): Promise<Sandbox> {
    needsDeno(options.provider);
    checkOptions("Sandbox.connect", options, CONNECTION_OPTIONS);
    const provider = resolveProvider(options.provider, credentialsOf(options));
    return new Sandbox(provider, await provider.connect(sandboxId));
  }

  /** Live sandboxes (oldest first), without their access tokens. */
  static async list(options: SandboxListOptions = {}): Promise<SandboxInfo[]> {
    needsDeno(options.provider);
    const query = listQuery(options);
    return await resolveProvider(options.provider, credentialsOf(options)).list(query);
  }

  /** Kill a sandbox by id: true when it was killed, false when there was none. */
  static async killById(
    sandboxId: string,
    options: SandboxConnectionOptions = {},
  ): Promise<boolean> {
    needsDeno(options.provider);
    checkOptions("Sandbox.killById", options, CONNECTION_OPTIONS);
    return await resolveProvider(options.provider, credentialsOf(options)).kill(sandboxId);
  }

  /** The sandbox id. */
  get id(): string {
    return this.#info.sandboxId;
  }

  /** The status as last read (`refreshInfo()` reads it again). */
  get status(): SandboxStatus {
    return this.#info.status;
  }

  /** The data-plane URL (the in-sandbox server, port 9000). */
  get url(): string {
    return this.#info.envdUrl ?? this.#address(9000).url;
  }

  /** The info as last read. */
  get info(): SandboxInfo {
    return { ...this.#info };
  }

  /**
   * The sandbox's capability names (`code`, `files`, `shell`, `terminal`, `ports`, …), as a set
   * that cannot change (`add`, `delete` and `clear` throw `TypeError`).
   */
  get capabilities(): ReadonlySet<string> {
    return this.#capabilities;
  }

  /** The provider's name. */
  get provider(): string {
    return this.#provider.name;
  }

  #address(port: number, ws = false) {
    if (!this.#handle.portAddress) {
      throw new ProviderFeatureNotSupportedError(
        `The ${this.#provider.name} provider has no HTTP data plane for sandbox ${this.id}`,
      );
    }
    return this.#handle.portAddress(port, ws);
  }

  /**
   * The client of the sandbox's own server (port 9000), made once. After `kill()`, reading it
   * throws `SandboxNotFoundError`.
   */
  get server(): ServerClient {
    return this.#server ??= this.serverAt(9000);
  }

  #killedError(): SandboxNotFoundError {
    return new SandboxNotFoundError(`Sandbox ${this.id} was killed`, {
      suggestion: "Create a new sandbox; a killed one cannot be used again.",
    });
  }

  /**
   * `fetch` for this sandbox's clients: when a request cannot reach the sandbox, ask the
   * provider whether the sandbox still exists, so that a sandbox killed (here or from another
   * process) answers `SandboxNotFoundError` rather than a bare connection failure.
   */
  #fetch = async (input: Request | URL | string, init?: RequestInit): Promise<Response> => {
    try {
      return await fetch(input, init);
    } catch (e) {
      if (init?.signal?.aborted) throw e;
      throw (await this.#gone()) ?? e;
    }
  };

  /** A `SandboxNotFoundError` when the provider no longer has this sandbox, else null. */
  async #gone(): Promise<SandboxNotFoundError | null> {
    try {
      const info = await this.#provider.getInfo(this.id);
      if (info.status !== "stopped") return null;
      this.#info = info;
    } catch (e) {
      if (!(e instanceof SandboxNotFoundError)) return null;
      this.#info = { ...this.#info, status: "stopped" };
      return new SandboxNotFoundError(`Sandbox ${this.id} no longer exists (killed or expired)`, {
        suggestion: "Create a new sandbox; a killed or expired one cannot be used again.",
        cause: e,
      });
    }
    return this.#killedError();
  }

  /** A new client for a server on `port` inside the sandbox. */
  serverAt(port = 9000, options: ServerAtOptions = {}): ServerClient {
    checkOptions("serverAt", options, ["token", "ptyPort", "timeout"]);
    if (this.#killed) throw this.#killedError();
    const http = this.#address(port);
    const pty = this.#address(options.ptyPort ?? 9001, true);
    const token = options.token ??
      (port === 9000 ? this.#handle.serverToken : Deno.env.get("SVC_SERVER_TOKEN")) ?? null;
    const client = new ServerClient(http.url, {
      token,
      headers: http.headers,
      ptyUrl: pty.url,
      timeout: options.timeout ?? 30,
      fetch: this.#fetch,
    });
    this.#clients.add(client);
    return client;
  }

  /** Start another in-sandbox server and return its client; see {@linkcode StartServerOptions}. */
  async startServer(options: StartServerOptions = {}): Promise<ServerClient> {
    return await startServer({
      server: this.server,
      serverCommand: this.#handle.serverCommand,
      serverAt: (port, o) => this.serverAt(port, o),
    }, options);
  }

  /** Destroy the sandbox: every process and every file of it. Calling it again does nothing. */
  async kill(): Promise<void> {
    for (const client of this.#clients) await client.close();
    this.#clients.clear();
    this.#server = undefined;
    this.#killed = true;
    if (this.#info.status === "stopped") return;
    await this.#provider.kill(this.id);
    this.#info = { ...this.#info, status: "stopped" };
  }

  /** Make the lifetime end `timeout` seconds from now (1 to 86400; it can shorten it). */
  async setTimeout(timeout: number): Promise<void> {
    await this.#provider.setTimeout(this.id, lifetime(timeout));
    await this.refreshInfo();
  }

  /** Whether it runs and its server answers (a request). */
  async isRunning(): Promise<boolean> {
    try {
      await this.refreshInfo();
    } catch (e) {
      if (e instanceof SandboxNotFoundError) return false;
      throw e;
    }
    return this.status === "running" && (await this.server.health());
  }

  /**
   * Freeze every process in the sandbox (children forked meanwhile too); its lifetime stops
   * running down until `resume()`.
   */
  async pause(): Promise<void> {
    await this.#provider.pause(this.id);
    await this.refreshInfo();
  }

  /**
   * Its use of its sizes now: CPU, memory, disk and processes against their limits (E2B has the
   * same name), read by the provider from the sandbox's cgroup and file system.
   */
  async getMetrics(): Promise<SandboxMetrics> {
    if (!this.#provider.getMetrics) throw this.#lacks("metrics");
    return await this.#provider.getMetrics(this.id);
  }

  /** What happened to it (`oom_kill`: the kernel killed a process for want of memory). */
  async getEvents(): Promise<SandboxEvent[]> {
    if (!this.#provider.getEvents) throw this.#lacks("events");
    return await this.#provider.getEvents(this.id);
  }

  #lacks(what: string): ProviderFeatureNotSupportedError {
    return new ProviderFeatureNotSupportedError(
      `The ${this.#provider.name} provider does not report a sandbox's ${what}`,
    );
  }

  async #oomKilledSince(since: Date): Promise<boolean> {
    if (!this.#provider.getEvents) return false;
    const events = await this.#provider.getEvents(this.id).catch(() => []);
    // The supervisor records a kill when it sees the kernel's count move: never before it.
    return events.some((e) => e.type === "oom_kill" && e.at.getTime() >= since.getTime());
  }

  /**
   * Continue a paused sandbox; one whose host or supervisor went away while it was paused starts
   * afresh on its kept files (its processes did not survive).
   */
  async resume(): Promise<void> {
    await this.#provider.resume(this.id);
    await this.refreshInfo();
  }

  /**
   * Save the sandbox's file system as a template named `name` (the `docker` provider: an image,
   * by the engine's commit); `Sandbox.create(name)` then starts from it. Returns the template's
   * name. `ProviderFeatureNotSupportedError` where the provider cannot.
   */
  async snapshot(name: string): Promise<string> {
    if (typeof name !== "string" || name === "") {
      throw new ValidationError("snapshot: name must be a non-empty string");
    }
    if (!this.#provider.snapshot) {
      throw new ProviderFeatureNotSupportedError(
        `The ${this.#provider.name} provider cannot snapshot a sandbox`,
        { suggestion: "Use the docker provider, whose templates are images." },
      );
    }
    return await this.#provider.snapshot(this.id, name);
  }

  /** Read the info again (status, lifetime end). */
  async refreshInfo(): Promise<SandboxInfo> {
    try {
      this.#info = await this.#provider.getInfo(this.id);
    } catch (e) {
      if (e instanceof SandboxNotFoundError) this.#info = { ...this.#info, status: "stopped" };
      throw e;
    }
    return this.info;
  }

  /** Run code (needs the `code` capability: `CapabilityNotSupportedError` E3004 otherwise). */
  async runCode(
    code: string,
    options: Omit<CodeRunOptions, "contextId"> = {},
  ): Promise<CodeResult> {
    return await this.code.run(code, options);
  }

  /** Open a terminal and connect to it; closing it closes the terminal. */
  async getTerminal(
    options: { cols?: number; rows?: number; shell?: string } = {},
  ): Promise<SandboxTerminal> {
    checkOptions("getTerminal", options, ["cols", "rows", "shell"]);
    const server = this.server;
    const session = await server.pty.create({
      cols: options.cols ?? 80,
      rows: options.rows ?? 24,
      shell: options.shell ?? "/bin/bash",
    });
    try {
      return new SandboxTerminal(server, await server.pty.connect(session.id));
    } catch (e) {
      await server.pty.delete(session.id).catch(() => {});
      throw e;
    }
  }

  #serverOn(port: number): ServerClient {
    if (!this.#handle.portAddress) {
      throw new ProviderFeatureNotSupportedError(
        `The ${this.#provider.name} provider has no HTTP data plane: named commands need one`,
        { suggestion: "Use a provider with an HTTP data plane (the local provider has one)." },
      );
    }
    return port === 9000 ? this.server : this.serverAt(port);
  }

  /** The named commands of the in-sandbox server (`GET /commands`). */
  async listCommands(options: { serverPort?: number } = {}): Promise<NamedCommand[]> {
    checkOptions("listCommands", options, ["serverPort"]);
    return await this.#serverOn(options.serverPort ?? 9000).commands.list();
  }

  /**
   * Call a named command with keyword arguments (`POST /commands/<name>`); returns its value.
   * `CommandNotFoundError` for an unknown name.
   */
  async run<T = unknown>(
    name: string,
    args: Record<string, unknown> = {},
    options: { serverPort?: number } = {},
  ): Promise<T> {
    if (typeof name !== "string" || name === "") {
      throw new ValidationError("name must be a command name");
    }
    checkOptions("run", options, ["serverPort"]);
    return await this.#serverOn(options.serverPort ?? 9000).commands.run<T>(name, args);
  }

  /** `await using sandbox = await Sandbox.create()` kills it on scope exit. */
  async [Symbol.asyncDispose](): Promise<void> {
    try {
      await this.kill();
    } catch (e) {
      if (!(e instanceof SandboxNotFoundError)) throw e;
    }
  }
}
