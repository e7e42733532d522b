/**
 * The host's end of the data plane into a docker sandbox, made by each process that creates or
 * connects to it:
 *
 * - a Unix socket of this process's own in the sandbox's host directory, which is bound
 *   read-only into the container (`/run/sandbar-host/sock/`): code inside may connect to it but
 *   never rename, replace or symlink it, and the host never dials a path the sandbox can write;
 * - a relay inside whose control connection carries `open <nonce> <port>` lines; the relay's data
 *   connection comes back to the socket presenting the nonce, which nothing else inside ever
 *   sees. The process that creates the sandbox has its relay preloaded into the server's process
 *   (the local provider's `relay.ts`, {@linkcode DockerChannel.listen}): it connects to the socket
 *   with a one-time key that came on the container's stdin, before the server loads, with no
 *   Deno process or engine call of its own. Every other process starts `relay.ts` (this
 *   directory's) by the engine's exec API ({@linkcode DockerChannel.open}), its stdin and stdout
 *   the control connection;
 * - the local provider's port gateways on loopback TCP (9000's and 9001's), which the SDK's
 *   clients talk to, dialling through the relay.
 *
 * Everything here lets this process exit while it is open (`unref`): the relay then reads the
 * end of its stdin and exits; the sandbox goes on.
 *
 * @module
 */

import { join } from "node:path";
import { tokensEqual } from "../../../shared/tokens_equal.ts";
import { randomHex, RelayDials, type RelayDialsOptions } from "../local/relay_dials.ts";
import { type Duplex, writeAll } from "../local/splice.ts";
import { type Gateway, type GatewayRefusal, startGateway } from "../local/gateway.ts";
import type { Engine } from "./engine.ts";

/** What the gateways need. */
export interface GatewayInputs {
  /** The sandbox id, for the gateways' `Host` routing. */
  sandboxId: string;
  /** The access token when the sandbox is secure, else null. */
  accessToken: string | null;
  /** The gateway's own token when secure, else null. */
  gatewayToken: string | null;
  /** A refusal for every request while it returns one (paused). */
  refuse(): GatewayRefusal | null;
}

/** What starting a relay by exec needs. */
export interface ChannelInputs extends GatewayInputs {
  /** The engine. */
  engine: Engine;
  /** The container's id. */
  container: string;
  /** The sandbox's socket directory on the host. */
  socketDir: string;
  /** The same directory inside the container. */
  socketDirInside: string;
  /** The relay's argv inside the container (`deno run …`), without its net permission and socket. */
  relayArgv: string[];
  /** The relay's environment. */
  relayEnv: string[];
}

/** How long a relay may take to be ready. */
const READY_TIMEOUT_MS = 30_000;

/** A fresh socket name in a sandbox's socket directory. */
export function newSocketName(): string {
  return `${randomHex(8)}.sock`;
}

/** An open data plane: the gateways' ports and a way to close it all. */
export class DockerChannel {
  readonly #dials: RelayDials;
  readonly #socket: string;
  /** The gateways (port 9000's first, then 9001's). */
  readonly gateways: Gateway[] = [];

  private constructor(socket: string, hello?: RelayDialsOptions["hello"]) {
    this.#socket = socket;
    this.#dials = new RelayDials(socket, {
      unref: true,
      notAttached: "the relay is not running",
      writeFailed: "the relay's control connection failed",
      hello,
    });
  }

  /** Listen, start the relay by exec, and return once it is ready. */
  static async open(inputs: ChannelInputs): Promise<DockerChannel> {
    const name = newSocketName();
    const channel = new DockerChannel(join(inputs.socketDir, name));
    try {
      await channel.#startRelay(inputs, `${inputs.socketDirInside}/${name}`);
      channel.#startGateways(inputs);
      return channel;
    } catch (e) {
      channel.close();
      throw e;
    }
  }

  /**
   * Listen on `socket` (made before the container, whose server preloads the relay) for the
   * relay that presents `key`, good once; `ready` resolves when it is in.
   */
  static listen(
    socket: string,
    key: string,
    inputs: GatewayInputs,
  ): { channel: DockerChannel; ready: Promise<DockerChannel> } {
    const ready = Promise.withResolvers<DockerChannel>();
    let unspent: string | null = key;
    const channel: DockerChannel = new DockerChannel(socket, (verb, value, conn, rest) => {
      if (verb !== "control" || unspent === null || !value || !tokensEqual(value, unspent)) {
        return undefined;
      }
      unspent = null;
      conn.unref();
      channel.#dials.attach({
        write: (bytes) => writeAll(conn, bytes),
        close: () => conn.close(),
      });
      channel.#startGateways(inputs);
      ready.resolve(channel);
      return channel.#readControl(conn, rest);
    });
    const slow = setTimeout(() => {
      ready.reject(new Error("the relay did not connect in time"));
      channel.close();
    }, READY_TIMEOUT_MS);
    Deno.unrefTimer(slow);
    ready.promise.then(() => clearTimeout(slow), () => clearTimeout(slow));
    return { channel, ready: ready.promise };
  }

  #startGateways(inputs: GatewayInputs): void {
    const dial = (port: number) => this.dial(port);
    for (const defaultPort of [9000, 9001]) {
      this.gateways.push(startGateway({
        sandboxId: inputs.sandboxId,
        defaultPort,
        accessToken: inputs.accessToken,
        gatewayToken: inputs.gatewayToken,
        dial,
        refuse: inputs.refuse,
        unref: true,
      }));
    }
  }

  /** The preloaded relay's lines (`fail <nonce> <why>`) until its connection ends. */
  async #readControl(conn: Deno.UnixConn, first: Uint8Array): Promise<void> {
    const decoder = new TextDecoder();
    let pending = decoder.decode(first, { stream: true });
    const buf = new Uint8Array(4096);
    try {
      while (pending.length <= 4096) {
        let at: number;
        while ((at = pending.indexOf("\n")) >= 0) {
          this.#dials.controlLine(pending.slice(0, at));
          pending = pending.slice(at + 1);
        }
        const n = await conn.read(buf).catch(() => null);
        if (n === null) break;
        pending += decoder.decode(buf.subarray(0, n), { stream: true });
      }
    } finally {
      // The sandbox is gone (or its server ended): close the gateways too, so the SDK's requests
      // fail to connect and it asks the provider whether the sandbox still exists.
      this.close();
    }
  }

  async #startRelay(inputs: ChannelInputs, socketInside: string): Promise<void> {
    const exec = await inputs.engine.call<{ Id: string }>(
      "POST",
      `/containers/${inputs.container}/exec`,
      {
        body: {
          AttachStdin: true,
          AttachStdout: true,
          AttachStderr: true,
          Tty: false,
          Env: inputs.relayEnv,
          // Deno names no abstract socket in a net permission list (the server's, where it
          // listens on them): the container has no network but its own loopback.
          Cmd: [
            inputs.relayArgv[0],
            inputs.relayArgv[1],
            "--allow-net",
            ...inputs.relayArgv.slice(2),
            socketInside,
          ],
        },
      },
    );
    const stream = await inputs.engine.hijack(`/exec/${exec.Id}/start`, {
      Detach: false,
      Tty: false,
    });
    this.#dials.attach(stream);
    const ready = Promise.withResolvers<void>();
    let stderr = "";
    const readLoop = async () => {
      const decoder = new TextDecoder();
      let pending = "";
      while (true) {
        const frame = await stream.frame();
        if (!frame) break;
        if (frame.stream === 2) {
          stderr = (stderr + decoder.decode(frame.data)).slice(-2000);
          continue;
        }
        pending += decoder.decode(frame.data, { stream: true });
        let at: number;
        while ((at = pending.indexOf("\n")) >= 0) {
          const line = pending.slice(0, at);
          pending = pending.slice(at + 1);
          if (line.split(" ")[0] === "ready") ready.resolve();
          this.#dials.controlLine(line);
        }
        if (pending.length > 4096) break;
      }
      ready.reject(new Error(`the relay ended: ${stderr.trim() || "no message"}`));
      // The sandbox is gone (or its relay was killed): close the gateways too, so the SDK's
      // requests fail to connect and it asks the provider whether the sandbox still exists.
      this.close();
    };
    readLoop().catch(() => {});
    const slow = setTimeout(
      () => ready.reject(new Error(`the relay did not start: ${stderr.trim()}`)),
      READY_TIMEOUT_MS,
    );
    try {
      await ready.promise;
    } finally {
      clearTimeout(slow);
    }
    stream.unref();
  }

  /** A connection to `127.0.0.1:<port>` inside the sandbox. */
  dial(port: number): Promise<Duplex> {
    return this.#dials.dial(port);
  }

  /** Whether the relay still runs. */
  get alive(): boolean {
    return this.#dials.alive;
  }

  /** Close the gateways, the relay and the socket. */
  close(): void {
    for (const g of this.gateways) g.close();
    this.#dials.close();
    try {
      Deno.removeSync(this.#socket);
    } catch { /* gone */ }
  }
}
