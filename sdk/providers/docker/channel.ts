/**
 * The host's end of the data plane into a docker sandbox, made by each process that creates or
 * connects to it:
 *
 * - a Unix socket of this process's own in the sandbox's host directory, which is bound
 *   read-only into the container (`/run/sandbar-host/sock/`): code inside may connect to it but
 *   never rename, replace or symlink it, and the host never dials a path the sandbox can write;
 * - the relay (`relay.ts`), started inside by the engine's exec API, its stdin and stdout the
 *   control connection; each `open <nonce> <port>` goes there, and the relay's data connection
 *   comes back to the socket presenting the nonce, which nothing else inside ever sees;
 * - the local provider's port gateways on loopback TCP (9000's and 9001's), which the SDK's
 *   clients talk to, dialling through the relay.
 *
 * Everything here lets this process exit while it is open (`unref`): the relay then reads the
 * end of its stdin and exits; the sandbox goes on.
 *
 * @module
 */

import { join } from "node:path";
import { type Duplex, readUntil } from "../local/splice.ts";
import { type Gateway, type GatewayRefusal, startGateway } from "../local/gateway.ts";
import type { Engine, HijackedStream } from "./engine.ts";

const NEWLINE = new Uint8Array([10]);
const HELLO_TIMEOUT_MS = 10_000;
const OPEN_TIMEOUT_MS = 15_000;

interface Pending {
  resolve(conn: Duplex): void;
  reject(e: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

function randomHex(bytes: number): string {
  return Array.from(
    crypto.getRandomValues(new Uint8Array(bytes)),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
}

function withPrefix(conn: Deno.UnixConn, prefix: Uint8Array): Duplex {
  let head: Uint8Array | null = prefix.length > 0 ? prefix : null;
  return {
    read(p) {
      if (!head) return conn.read(p);
      const n = Math.min(p.length, head.length);
      p.set(head.subarray(0, n));
      head = n < head.length ? head.subarray(n) : null;
      return Promise.resolve(n);
    },
    write: (p) => conn.write(p),
    close: () => conn.close(),
  };
}

/** What starting the relay needs. */
export interface ChannelInputs {
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
  /** The sandbox id, for the gateways' `Host` routing. */
  sandboxId: string;
  /** The access token when the sandbox is secure, else null. */
  accessToken: string | null;
  /** The gateway's own token when secure, else null. */
  gatewayToken: string | null;
  /** A refusal for every request while it returns one (paused). */
  refuse(): GatewayRefusal | null;
}

/** An open data plane: the gateways' ports and a way to close it all. */
export class DockerChannel {
  readonly #listener: Deno.Listener<Deno.UnixConn, Deno.UnixAddr>;
  readonly #socket: string;
  readonly #pending = new Map<string, Pending>();
  #control: HijackedStream | null = null;
  #writes: Promise<void> = Promise.resolve();
  #closed = false;
  /** The gateways (port 9000's first, then 9001's). */
  readonly gateways: Gateway[] = [];

  private constructor(socket: string) {
    this.#socket = socket;
    this.#listener = Deno.listen({ transport: "unix", path: socket });
    this.#listener.unref();
    this.#accept().catch(() => {});
  }

  /** Listen, start the relay, and return once it is ready. */
  static async open(inputs: ChannelInputs): Promise<DockerChannel> {
    const name = `${randomHex(8)}.sock`;
    const channel = new DockerChannel(join(inputs.socketDir, name));
    try {
      await channel.#startRelay(inputs, `${inputs.socketDirInside}/${name}`);
      const dial = (port: number) => channel.dial(port);
      for (const defaultPort of [9000, 9001]) {
        channel.gateways.push(startGateway({
          sandboxId: inputs.sandboxId,
          defaultPort,
          accessToken: inputs.accessToken,
          gatewayToken: inputs.gatewayToken,
          dial,
          refuse: inputs.refuse,
          unref: true,
        }));
      }
      return channel;
    } catch (e) {
      channel.close();
      throw e;
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
          // Deno's net permission names a Unix socket by its exact path.
          Cmd: [
            inputs.relayArgv[0],
            inputs.relayArgv[1],
            `--allow-net=127.0.0.1,unix:${socketInside}`,
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
    this.#control = stream;
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
          const [verb, nonce, ...why] = pending.slice(0, at).split(" ");
          pending = pending.slice(at + 1);
          if (verb === "ready") ready.resolve();
          const p = verb === "fail" ? this.#pending.get(nonce) : undefined;
          if (p) {
            this.#pending.delete(nonce);
            clearTimeout(p.timer);
            p.reject(new Error(why.join(" ") || "the relay could not connect"));
          }
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
      30_000,
    );
    try {
      await ready.promise;
    } finally {
      clearTimeout(slow);
    }
    stream.unref();
  }

  async #accept(): Promise<void> {
    for await (const conn of this.#listener) {
      this.#hello(conn).catch(() => closeQuietly(conn));
    }
  }

  async #hello(conn: Deno.UnixConn): Promise<void> {
    const slow = setTimeout(() => closeQuietly(conn), HELLO_TIMEOUT_MS);
    const line = await readUntil(conn, NEWLINE, 256).catch(() => null);
    clearTimeout(slow);
    if (!line) return closeQuietly(conn);
    const [verb, nonce] = new TextDecoder().decode(line.head).split(" ");
    const pending = verb === "data" && nonce ? this.#pending.get(nonce) : undefined;
    if (!pending) return closeQuietly(conn);
    this.#pending.delete(nonce);
    clearTimeout(pending.timer);
    pending.resolve(withPrefix(conn, line.rest));
  }

  #lost(why: string): void {
    this.#control?.close();
    this.#control = null;
    for (const [nonce, p] of this.#pending) {
      clearTimeout(p.timer);
      p.reject(new Error(why));
      this.#pending.delete(nonce);
    }
  }

  /** A connection to `127.0.0.1:<port>` inside the sandbox. */
  dial(port: number): Promise<Duplex> {
    const control = this.#control;
    if (!control || this.#closed) return Promise.reject(new Error("the relay is not running"));
    const nonce = randomHex(16);
    const opened = new Promise<Duplex>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(nonce);
        reject(new Error(`the relay did not connect to port ${port} in time`));
      }, OPEN_TIMEOUT_MS);
      this.#pending.set(nonce, { resolve, reject, timer });
    });
    const line = new TextEncoder().encode(`open ${nonce} ${port}\n`);
    this.#writes = this.#writes.then(() => control.write(line)).catch(() =>
      this.#lost("the relay's stdin failed")
    );
    return opened;
  }

  /** Whether the relay still runs. */
  get alive(): boolean {
    return this.#control !== null && !this.#closed;
  }

  /** Close the gateways, the relay and the socket. */
  close(): void {
    this.#closed = true;
    for (const g of this.gateways) g.close();
    try {
      this.#listener.close();
    } catch { /* closed */ }
    this.#lost("closed");
    try {
      Deno.removeSync(this.#socket);
    } catch { /* gone */ }
  }
}

function closeQuietly(conn: Duplex | null): void {
  try {
    conn?.close();
  } catch { /* closed */ }
}
