/**
 * What every handler can reach: the compiled policy, the root directory, the named command
 * registry, and the long-lived services of each group (process table, terminals, browser),
 * created on first use and closed with the server.
 *
 * @module
 */

import type { CommandRegistry } from "./named_commands/registry.ts";
import type { CompiledPolicy, EndpointState, Identity } from "./policy/compile.ts";

/** A long-lived service of a group; closed when the server stops. */
export interface Service {
  /** Release everything the service holds: processes, descriptors, browsers. */
  close(): Promise<void> | void;
}

/** Where the server listens, once it does. */
export interface ServerAddresses {
  /**
   * `http://host:port` of the HTTP API; on an abstract Unix socket, `http+unix://` and its
   * name with `%40` for the leading NUL (as `ss` and `/proc/net/unix` show it: `@name`).
   */
  url: string;
  /** `ws://host:port` of the PTY WebSocket, or `ws+unix://%40name`. */
  ptyUrl: string;
}

/**
 * The TCP addresses of `addresses`: none for a listener on an abstract socket (nor before the
 * server listens).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tcpAddresses } from "./state.ts";
 * assert.deepEqual(
 *   tcpAddresses({ url: "http://127.0.0.1:9000", ptyUrl: "ws+unix://%40sandbar-x-9001" }),
 *   [{ host: "127.0.0.1", port: 9000 }],
 * );
 * ```
 */
export function tcpAddresses(addresses: ServerAddresses): { host: string; port: number }[] {
  return [addresses.url, addresses.ptyUrl].filter((u) => /^(http|ws):\/\//.test(u)).map((u) => {
    const url = new URL(u.replace(/^ws/, "http"));
    return { host: url.hostname.replace(/^\[|\]$/g, ""), port: Number(url.port) };
  });
}

/**
 * The TCP ports of `addresses` (none on abstract sockets, nor before the server listens).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listeningPorts } from "./state.ts";
 * const ports = listeningPorts({ url: "http://127.0.0.1:9000", ptyUrl: "ws://[::1]:9001" });
 * assert.deepEqual(ports, [9000, 9001]);
 * ```
 */
export function listeningPorts(addresses: ServerAddresses): number[] {
  return tcpAddresses(addresses).map((a) => a.port);
}

/**
 * The server's shared state.
 */
export class ServerState {
  /** The compiled policy. */
  readonly policy: CompiledPolicy;
  /** The root directory (the workspace). */
  readonly root: string;
  /** Named commands. */
  readonly commands: CommandRegistry;
  /** The server's private directory for temp files (writable under the narrowed permissions). */
  readonly stateDir: string;
  /** Filled in once the listeners are up. */
  addresses: ServerAddresses = { url: "", ptyUrl: "" };
  readonly #services = new Map<string, Service>();
  #closed = false;

  /** Make the state. */
  constructor(policy: CompiledPolicy, root: string, commands: CommandRegistry, stateDir: string) {
    this.policy = policy;
    this.root = root;
    this.commands = commands;
    this.stateDir = stateDir;
  }

  /** The service under `key`, created by `create` on first use. */
  service<T extends Service>(key: string, create: () => T): T {
    if (this.#closed) throw new Error("the server is shutting down");
    let s = this.#services.get(key);
    if (!s) {
      s = create();
      this.#services.set(key, s);
    }
    return s as T;
  }

  /** Close every service, in reverse order of creation. */
  async close(): Promise<void> {
    this.#closed = true;
    const services = [...this.#services.values()].reverse();
    this.#services.clear();
    for (const s of services) {
      try {
        await s.close();
      } catch (e) {
        console.error(`sandbar: closing a service failed: ${(e as Error).message}`);
      }
    }
  }
}

/** Hono's environment type for every route of the server. */
export type ServerEnv = {
  Variables: {
    /** The server's state. */
    state: ServerState;
    /** The endpoint matched, with its decided state. */
    endpoint: EndpointState;
    /** The authenticated caller (unset on `health`). */
    identity: Identity;
  };
};
