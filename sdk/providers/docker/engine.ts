/**
 * A small client of the Docker Engine API (v1.41, which Docker 20.10 and later and Podman's
 * compatible service speak) over `DOCKER_HOST`: a Unix socket (`unix:///var/run/docker.sock`,
 * the default) or `tcp://host:port`.
 *
 * Plain requests go through Deno's own `fetch`: for a Unix socket with an HTTP client whose
 * proxy is the socket (`Deno.createHttpClient({ proxy: { transport: "unix", path } })`), so no
 * npm client is needed (dockerode would pull in Node's `http` and its stream stack for what is
 * a handful of JSON calls). The one call `fetch` cannot make is a hijacked connection (an exec's
 * stdin and stdout over the request's own connection after `101 UPGRADED`): {@linkcode
 * Engine.hijack} writes that request by hand on a socket of its own.
 *
 * @module
 */

import { ProviderFeatureNotSupportedError, SandboxError } from "../../errors/mod.ts";
import { type Duplex, readUntil, writeAll } from "../local/splice.ts";

/** The API version every path is prefixed with. */
export const API_VERSION = "v1.41";

/** Where the engine listens. */
export type EngineAddress =
  | { kind: "unix"; path: string }
  | { kind: "tcp"; host: string; port: number };

/** An error the engine answered with (its status and its `message`). */
export class EngineError extends SandboxError {
  /** The HTTP status. */
  readonly status: number;
  /** Make it. */
  constructor(status: number, message: string) {
    super(`Docker engine: ${message} (HTTP ${status})`);
    this.status = status;
  }
}

/**
 * Parse a `DOCKER_HOST` value.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { engineAddress } from "./engine.ts";
 * assert.deepEqual(engineAddress("tcp://127.0.0.1:2375"), { kind: "tcp", host: "127.0.0.1", port: 2375 });
 * assert.deepEqual(engineAddress("unix:///run/docker.sock"), { kind: "unix", path: "/run/docker.sock" });
 * ```
 */
export function engineAddress(dockerHost: string): EngineAddress {
  if (dockerHost.startsWith("unix://")) {
    const path = dockerHost.slice("unix://".length);
    if (!path.startsWith("/")) {
      throw new ProviderFeatureNotSupportedError(`DOCKER_HOST ${dockerHost}: not an absolute path`);
    }
    return { kind: "unix", path };
  }
  const tcp = /^tcp:\/\/(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})\/?$/.exec(dockerHost);
  if (tcp) return { kind: "tcp", host: tcp[1].replace(/^\[|\]$/g, ""), port: Number(tcp[2]) };
  throw new ProviderFeatureNotSupportedError(`DOCKER_HOST ${dockerHost} is not supported`, {
    suggestion: "Use unix:///path/to/docker.sock or tcp://host:port (TLS and ssh:// are not " +
      "supported yet).",
  });
}

/** Whether the engine runs on this machine (a Unix socket, or TCP on a loopback address). */
export function engineIsLocal(address: EngineAddress): boolean {
  if (address.kind === "unix") return true;
  return /^(127\.\d+\.\d+\.\d+|localhost|::1)$/.test(address.host);
}

/** Options of {@linkcode Engine.call}. */
export interface EngineCallOptions {
  /** A JSON body, or raw bytes (sent as `application/x-tar`). */
  body?: unknown;
  /** Query parameters. */
  query?: Record<string, string | number | boolean | undefined>;
  /** Statuses that are not errors besides 2xx (for example 304, 404). */
  accept?: number[];
  /** Extra headers. */
  headers?: Record<string, string>;
}

/** The client. */
export class Engine {
  /** Where it talks to. */
  readonly address: EngineAddress;
  readonly #client: Deno.HttpClient | undefined;
  readonly #base: string;
  #product: Promise<"docker" | "podman"> | undefined;

  /** Make a client for `address` (nothing is connected until a call). */
  constructor(address: EngineAddress) {
    this.address = address;
    if (address.kind === "unix") {
      this.#client = Deno.createHttpClient({ proxy: { transport: "unix", path: address.path } });
      this.#base = "http://docker";
    } else {
      this.#base = `http://${
        address.host.includes(":") ? `[${address.host}]` : address.host
      }:${address.port}`;
    }
  }

  #url(path: string, query: EngineCallOptions["query"] = {}): string {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) q.set(k, String(v));
    const qs = q.toString();
    return `${this.#base}/${API_VERSION}${path}${qs ? `?${qs}` : ""}`;
  }

  /** A request; the response as it came (the caller reads or cancels its body). */
  async fetch(method: string, path: string, options: EngineCallOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { ...options.headers };
    let body: BodyInit | undefined;
    if (options.body instanceof Uint8Array) {
      body = options.body as Uint8Array<ArrayBuffer>;
      headers["content-type"] ??= "application/x-tar";
    } else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers["content-type"] = "application/json";
    }
    let res: Response;
    try {
      res = await fetch(this.#url(path, options.query), {
        method,
        headers,
        body,
        client: this.#client,
      });
    } catch (e) {
      throw new SandboxError(
        `Cannot reach the Docker engine at ${this.describe()}: ` +
          (e as Error).message,
        {
          suggestion: "Start the engine (dockerd), or point DOCKER_HOST at one you may use.",
          cause: e,
        },
      );
    }
    if (res.ok || options.accept?.includes(res.status)) return res;
    const text = await res.text();
    let message = text.trim();
    try {
      message = JSON.parse(text).message ?? message;
    } catch { /* not JSON */ }
    throw new EngineError(res.status, message);
  }

  /** A request whose answer is JSON (or nothing); null for an accepted non-2xx status. */
  async call<T = unknown>(
    method: string,
    path: string,
    options: EngineCallOptions = {},
  ): Promise<T> {
    const res = await this.fetch(method, path, options);
    const text = await res.text();
    if (!res.ok) return null as T;
    // Blank is nothing: Podman answers a detached exec start with a lone "\n" (Docker with "").
    return (text.trim() ? JSON.parse(text) : null) as T;
  }

  /**
   * Which engine answers: Docker's, or Podman's Docker-compatible service (`podman system
   * service`), told apart by the `Libpod-Api-Version` header Podman puts on its answers (asked
   * once). They differ where Podman's compatible layer does less (`docs/sdk/providers.md`,
   * "Podman").
   */
  product(): Promise<"docker" | "podman"> {
    this.#product ??= this.fetch("GET", "/_ping").then(async (res) => {
      await res.body?.cancel();
      return res.headers.has("libpod-api-version") ? "podman" : "docker";
    });
    this.#product.catch(() => this.#product = undefined);
    return this.#product;
  }

  /**
   * Run `cmd` in a running container through the engine's exec API (no TTY, no stdin) and
   * return its exit code and standard output.
   */
  async exec(container: string, cmd: string[]): Promise<{ exitCode: number; stdout: string }> {
    const exec = await this.call<{ Id: string }>("POST", `/containers/${container}/exec`, {
      body: { AttachStdin: false, AttachStdout: true, AttachStderr: true, Tty: false, Cmd: cmd },
    });
    const stream = await this.hijack(`/exec/${exec.Id}/start`, { Detach: false, Tty: false });
    let stdout = "";
    try {
      const decoder = new TextDecoder();
      for (let frame = await stream.frame(); frame; frame = await stream.frame()) {
        if (frame.stream === 1) stdout += decoder.decode(frame.data, { stream: true });
      }
    } finally {
      stream.close();
    }
    // The stream ends with the process; the engine may record its exit a moment later.
    for (let i = 0; i < 100; i++) {
      const done = await this.call<{ Running: boolean; ExitCode: number | null }>(
        "GET",
        `/exec/${exec.Id}/json`,
      );
      if (!done.Running && done.ExitCode !== null) return { exitCode: done.ExitCode, stdout };
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new SandboxError(`Docker engine: the exec of ${cmd[0]} did not end`);
  }

  /**
   * A container's output as its log keeps it, stdout and stderr interleaved (the last `tail`
   * lines, or all), or "" when the engine has no log of it (gone, or a log driver that keeps
   * none).
   */
  async logs(container: string, tail?: number): Promise<string> {
    const res = await this.fetch("GET", `/containers/${container}/logs`, {
      query: { stdout: true, stderr: true, tail: tail ?? "all" },
      accept: [404, 409],
    }).catch(() => null);
    if (!res || !res.ok) {
      await res?.body?.cancel();
      return "";
    }
    // Without a TTY, the engine's multiplexed format: an 8-byte head (the stream, 3 bytes of
    // nothing, the frame's size, big-endian) before each frame.
    const bytes = new Uint8Array(await res.arrayBuffer());
    const decoder = new TextDecoder();
    let out = "";
    for (let at = 0; at + 8 <= bytes.length;) {
      const size = new DataView(bytes.buffer, at + 4, 4).getUint32(0);
      out += decoder.decode(bytes.subarray(at + 8, at + 8 + size), { stream: true });
      at += 8 + size;
    }
    return out + decoder.decode();
  }

  /** `unix:///…` or `tcp://…`, for messages. */
  describe(): string {
    return this.address.kind === "unix"
      ? `unix://${this.address.path}`
      : `tcp://${this.address.host}:${this.address.port}`;
  }

  /**
   * A hijacked connection: `POST path` (with a JSON body, or none) and `Upgrade: tcp`; after the
   * engine's `101`, the connection carries the stream both ways (an exec's or an attached
   * container's stdin one way, its multiplexed stdout and stderr the other). An attach takes no
   * body: bytes after the head would reach the container's stdin.
   */
  async hijack(
    path: string,
    body?: unknown,
    query: EngineCallOptions["query"] = {},
  ): Promise<HijackedStream> {
    const a = this.address;
    const conn = a.kind === "unix"
      ? await Deno.connect({ transport: "unix", path: a.path })
      : await Deno.connect({ hostname: a.host, port: a.port });
    const payload = new TextEncoder().encode(body === undefined ? "" : JSON.stringify(body));
    const head = `POST ${this.#url(path, query).slice(this.#base.length)} HTTP/1.1\r\n` +
      `Host: docker\r\n` +
      (body === undefined ? "" : "Content-Type: application/json\r\n") +
      `Content-Length: ${payload.length}\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n`;
    try {
      await writeAll(conn, new TextEncoder().encode(head));
      await writeAll(conn, payload);
      const answer = await readUntil(conn, new TextEncoder().encode("\r\n\r\n"), 64 * 1024);
      if (!answer) throw new SandboxError(`Docker engine: ${path} closed without an answer`);
      const status = Number(
        /^HTTP\/1\.[01] (\d{3})/.exec(new TextDecoder().decode(answer.head))?.[1],
      );
      if (status !== 101 && status !== 200) {
        throw new EngineError(
          status,
          new TextDecoder().decode(answer.rest).trim() || "hijack refused",
        );
      }
      return new HijackedStream(conn, answer.rest);
    } catch (e) {
      conn.close();
      throw e;
    }
  }

  /** Drop the pooled connections. */
  close(): void {
    this.#client?.close();
  }
}

/**
 * The engine's side of a hijacked exec without a TTY: writes go to the process's stdin; reads
 * give its stdout and stderr, demultiplexed from the engine's 8-byte frame headers
 * (`[stream, 0, 0, 0, size (4 bytes, big-endian)]`).
 */
export class HijackedStream {
  readonly #conn: Deno.Conn;
  #buffered: Uint8Array;

  /** Wrap a connection whose first bytes (`rest`) were already read. */
  constructor(conn: Deno.Conn, rest: Uint8Array) {
    this.#conn = conn;
    this.#buffered = rest;
  }

  /** Let the process end while this stream is open (it closes with the process). */
  unref(): void {
    this.#conn.unref();
  }

  async #fill(n: number): Promise<boolean> {
    const buf = new Uint8Array(64 * 1024);
    while (this.#buffered.length < n) {
      const got = await this.#conn.read(buf).catch(() => null);
      if (got === null) return false;
      const next = new Uint8Array(this.#buffered.length + got);
      next.set(this.#buffered);
      next.set(buf.subarray(0, got), this.#buffered.length);
      this.#buffered = next;
    }
    return true;
  }

  /** The next frame (`stream` 1 is stdout, 2 stderr), or null at the end. */
  async frame(): Promise<{ stream: number; data: Uint8Array } | null> {
    if (!(await this.#fill(8))) return null;
    const view = new DataView(this.#buffered.buffer, this.#buffered.byteOffset, 8);
    const stream = view.getUint8(0);
    const size = view.getUint32(4);
    if (!(await this.#fill(8 + size))) return null;
    const data = this.#buffered.slice(8, 8 + size);
    this.#buffered = this.#buffered.subarray(8 + size);
    return { stream, data };
  }

  /** Write to the process's stdin. */
  async write(bytes: Uint8Array): Promise<void> {
    await writeAll(this.#conn as Duplex, bytes);
  }

  /** End the process's stdin (the engine closes it), keeping its output coming. */
  async closeWrite(): Promise<void> {
    await this.#conn.closeWrite().catch(() => {});
  }

  /** Close the connection (the engine then closes the process's stdin). */
  close(): void {
    try {
      this.#conn.close();
    } catch { /* closed */ }
  }
}
