/**
 * The provider interface: what `Sandbox` needs from whatever runs sandboxes. A provider is a
 * control plane (create, connect, list, kill, pause, resume, set the lifetime) plus the address
 * of each sandbox's data plane, the in-sandbox server. Everything else (`commands`, `files`,
 * `code`, terminals, named commands) goes through that data plane, so a provider does not
 * implement it.
 *
 * @module
 */

import type { NetworkConfig } from "../../server/egress/rules.ts";
import type { AuditEntry } from "../../server/pipeline/audit.ts";
import type {
  SandboxEvent,
  SandboxInfo,
  SandboxMetrics,
  SandboxStatus,
} from "../models/sandbox.ts";

/** Credentials and endpoints a call may carry; each provider reads what it understands. */
export interface ProviderCredentials {
  /** The provider's API key. */
  apiKey?: string;
  /** The control plane's URL. */
  apiUrl?: string;
  /** The domain of sandbox hosts (`{port}-{id}.{domain}`). */
  domain?: string;
  /** Access key id of a cloud provider. */
  accessKeyId?: string;
  /** Access key secret of a cloud provider. */
  accessKeySecret?: string;
}

/** What `Sandbox.create` asks of a provider, validated and with defaults applied. */
export interface ProviderCreateRequest {
  /** Template name. */
  template: string;
  /** Lifetime in seconds (1 to 86400). */
  timeout: number;
  /** Seconds the create call may take, or undefined for the provider's default. */
  requestTimeout?: number;
  /** User metadata. */
  metadata: Record<string, string>;
  /** Environment variables of the sandbox. */
  envs: Record<string, string>;
  /** CPU cores. */
  cpu?: number;
  /** Memory in MB. */
  memory?: number;
  /** Disk in MB. */
  disk?: number;
  /** GPU specification. */
  gpu?: string;
  /** Whether port access needs the access token. */
  secure: boolean;
  /**
   * The in-sandbox server's policy: a policy object (the server's policy file as an object) or
   * a preset name. Providers that cannot set one refuse it.
   */
  policy?: Record<string, unknown> | string;
  /** A named-commands file (`.ts`) for the in-sandbox server. */
  commandsFile?: string;
  /** How to isolate it (`local`: `bwrap` or `none`); undefined for the provider's default. */
  isolation?: "bwrap" | "none";
  /** The most processes the sandbox may have at once. */
  pids?: number;
  /** Named volumes to mount: volume name to the absolute path inside. */
  volumes?: Record<string, string>;
  /**
   * Its network rules (checked already), or undefined for no network. Providers that cannot
   * give one refuse it.
   */
  network?: NetworkConfig;
}

/** How to reach one port of a sandbox from this process. */
export interface PortAddress {
  /** Base URL (`http://…` or `ws://…`), without a trailing slash. */
  url: string;
  /** Headers every request must carry (routing, gateway access token). */
  headers: Record<string, string>;
}

/** One sandbox as a provider describes it. */
export interface SandboxHandle {
  /** Its info (the token included). */
  info: SandboxInfo;
  /** Whether port access requires the access token. */
  secure: boolean;
  /** The domain of its public hosts: `network.getHost(port)` is `{port}-{id}.{domain}`. */
  domain: string;
  /** `http` or `https`, for `network.getUrl`. */
  scheme: "http" | "https";
  /** Capability names of the sandbox (for example `code`, `files`, `shell`, `terminal`). */
  capabilities: readonly string[];
  /**
   * The in-sandbox server's token (`Authorization: Bearer`), or null when the provider has no
   * HTTP data plane.
   */
  serverToken: string | null;
  /**
   * Where a port of the sandbox is reached from this process (`ws: true` for a WebSocket), or
   * null when the provider has no HTTP data plane.
   */
  portAddress: ((port: number, ws?: boolean) => PortAddress) | null;
  /**
   * The argv that runs the sandbar server (`server/main.ts`) inside the sandbox, for
   * `sandbox.startServer()`; null when the provider cannot say.
   */
  serverCommand: readonly string[] | null;
}

/** The query of `Sandbox.list`. */
export interface ProviderListQuery {
  /** Only sandboxes in this status. */
  status?: SandboxStatus;
  /** At most this many (default 100). */
  limit: number;
  /** Skip this many first (default 0). */
  offset: number;
}

/**
 * A provider: the control plane of some kind of sandbox.
 *
 * To add one (an E2B-style REST control plane, a VM pool, …), implement this interface in one
 * file and register it with `registerProvider(name, factory)`; `Sandbox.create({ provider:
 * name })` then uses it. See `docs/sdk/sandbox.md`.
 */
export interface SandboxProvider {
  /** The provider's name, as registered. */
  readonly name: string;
  /** Create a sandbox and return once its data plane answers. */
  create(request: ProviderCreateRequest): Promise<SandboxHandle>;
  /** Describe a live sandbox (throws `SandboxNotFoundError` for an unknown id). */
  connect(sandboxId: string): Promise<SandboxHandle>;
  /** Its info now (throws `SandboxNotFoundError` for an unknown id). */
  getInfo(sandboxId: string): Promise<SandboxInfo>;
  /** Live sandboxes, oldest first. */
  list(query: ProviderListQuery): Promise<SandboxInfo[]>;
  /** Destroy a sandbox; false when there was none with that id. */
  kill(sandboxId: string): Promise<boolean>;
  /** Set its lifetime to end `timeout` seconds from now. */
  setTimeout(sandboxId: string, timeout: number): Promise<void>;
  /** Stop every process of the sandbox. */
  pause(sandboxId: string): Promise<void>;
  /** Continue a paused sandbox. */
  resume(sandboxId: string): Promise<void>;
  /** Its use of its sizes now; a provider without it makes `getMetrics()` raise E8004. */
  getMetrics?(sandboxId: string): Promise<SandboxMetrics>;
  /** What happened to it (OOM kills), oldest first; absent: `getEvents()` raises E8004. */
  getEvents?(sandboxId: string): Promise<SandboxEvent[]>;
  /** Save its file system as a template named `name`; returns the template's name. */
  snapshot?(sandboxId: string, name: string): Promise<string>;
  /**
   * Put new network rules in force (`false`: nothing allowed): new connections use them at
   * once, open ones they refuse are closed; returns how many were. Optional.
   */
  updateNetwork?(sandboxId: string, network: NetworkConfig | false): Promise<number>;
  /** The sandbox's last `limit` egress audit lines, oldest first. Optional. */
  networkAudit?(sandboxId: string, limit: number): Promise<AuditEntry[]>;
}
