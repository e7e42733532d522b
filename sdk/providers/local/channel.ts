/**
 * The host's end of the channel into a bubblewrap sandbox's network namespace.
 *
 * The supervisor listens on a Unix socket in a directory of its own that is mounted read-only
 * inside the sandbox (`/run/sandbar-channel`): nothing inside can rename, replace or symlink
 * the socket, and the host never dials a path the sandbox can write. The relay inside connects
 * out to it:
 *
 * 1. first, a control connection: `control <key>\n`, with a key the supervisor wrote for the
 *    relay alone (it reads and removes it before anything else runs). The key is good once:
 *    after the relay has connected, nobody else can become the control connection;
 * 2. for each connection the gateway needs, the supervisor sends `open <nonce> <port>\n` on the
 *    control connection; the relay connects to `127.0.0.1:<port>` inside and then opens a data
 *    connection to the socket with `data <nonce>\n` (or answers `fail <nonce> <why>\n`). The
 *    nonce is random and travels only over the control connection, so code inside that connects
 *    to the socket cannot take a connection meant for the relay.
 *
 * Anything else on the socket is closed at once.
 *
 * @module
 */

import { BRIDGE_PORT } from "../../../server/egress/bridge.ts";
export { CHANNEL_ENV } from "./channel_env.ts";
import { tokensEqual } from "../../../shared/tokens_equal.ts";
import { randomHex, RelayDials } from "./relay_dials.ts";
import { type Duplex, writeAll } from "./splice.ts";

/** The channel socket's name in its directory. */
export const CHANNEL_SOCKET = "relay.sock";
/** The relay's one-time key, in the sandbox's run directory. */
export const RELAY_KEY_FILE = "relay_key";
/** The egress proxy's socket in the channel directory (the sandbox's only way out). */
export const EGRESS_SOCKET = "egress.sock";
/** The port of the egress bridge on 127.0.0.1 inside the sandbox (its proxy variables). */
export const EGRESS_BRIDGE_PORT = BRIDGE_PORT;
/**
 * The directory (in the sandbox's directory on the host) of its egress CA's certificate
 * (`ca.pem`) and the system bundle with it (`bundle.pem`), bound read-only at
 * {@linkcode EGRESS_CA_INSIDE}.
 */
export const EGRESS_CA_DIR = "egress-ca";
/** Where the egress CA directory is inside the sandbox. */
export const EGRESS_CA_INSIDE = "/opt/sandbar/egress-ca";

/** A fresh key for the relay's control connection. */
export function newRelayKey(): string {
  return randomHex(32);
}

/** The supervisor's side of the channel. */
export class RelayChannel {
  readonly #dials: RelayDials;
  #key: string | null;
  readonly #ready = Promise.withResolvers<void>();

  /** Listen on `path` for a relay that will present `key`. */
  constructor(path: string, key: string) {
    this.#key = key;
    this.#ready.promise.catch(() => {});
    this.#dials = new RelayDials(path, {
      notAttached: "the relay is not connected",
      writeFailed: "the relay's channel failed",
      hello: (verb, value, conn, rest) => {
        if (verb !== "control" || this.#key === null || !value || !tokensEqual(value, this.#key)) {
          return undefined;
        }
        this.#key = null;
        this.#dials.attach({ write: (bytes) => writeAll(conn, bytes), close: () => conn.close() });
        this.#ready.resolve();
        return this.#readControl(conn, rest);
      },
    });
  }

  /** Resolves once the relay's control connection is in. */
  get ready(): Promise<void> {
    return this.#ready.promise;
  }

  async #readControl(conn: Deno.UnixConn, first: Uint8Array): Promise<void> {
    let buffered = first;
    const buf = new Uint8Array(4096);
    try {
      while (true) {
        let at: number;
        while ((at = buffered.indexOf(10)) >= 0) {
          this.#dials.controlLine(new TextDecoder().decode(buffered.subarray(0, at)));
          buffered = buffered.subarray(at + 1);
        }
        if (buffered.length > 4096) break; // a line that long is not the relay's
        const n = await conn.read(buf);
        if (n === null) break;
        const next = new Uint8Array(buffered.length + n);
        next.set(buffered);
        next.set(buf.subarray(0, n), buffered.length);
        buffered = next;
      }
    } finally {
      this.#lost("the relay closed its channel");
    }
  }

  #lost(why: string): void {
    this.#dials.lost(why);
    this.#ready.reject(new Error(why));
  }

  /** A connection to `127.0.0.1:<port>` inside the sandbox. */
  dial(port: number): Promise<Duplex> {
    return this.#dials.dial(port);
  }

  /** Stop listening and drop every connection. */
  close(): void {
    this.#dials.close();
    this.#ready.reject(new Error("closed"));
  }
}
