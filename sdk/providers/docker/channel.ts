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
import { randomHex, RelayDials } from "../local/relay_dials.ts";
import type { Duplex } from "../local/splice.ts";
import { type Gateway, type GatewayRefusal, startGateway } from "../local/gateway.ts";
import type { Engine } from "./engine.ts";

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
  readonly #dials: RelayDials;
  readonly #socket: string;
  /** The gateways (port 9000's first, then 9001's). */
  readonly gateways: Gateway[] = [];

  private constructor(socket: string) {
    this.#socket = socket;
    this.#dials = new RelayDials(socket, {
      unref: true,
      notAttached: "the relay is not running",
      writeFailed: "the relay's stdin failed",
    });
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
      30_000,
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
