/**
 * The two loopback origins of the network secrets tests (local and docker sandboxes alike):
 * `api.secret.test` over TLS on 127.0.0.2, with a certificate from a CA of its own (given back
 * for the sandbox's `ca`), and a plain HTTP origin on 127.0.0.3. Each records the
 * `Authorization` header of every request, so a test sees where the real secret arrived and
 * where only its placeholder did.
 *
 * @module
 */

import { EgressCa } from "../../server/egress/tls_intercept.ts";

/** The running origins and what each has seen. */
export interface SecretOrigins {
  /** The TLS origin's CA, PEM: what the sandbox's network `ca` must trust. */
  caPem: string;
  /** The TLS origin's port on 127.0.0.2 (`https://api.secret.test:<port>/`). */
  tlsPort: number;
  /** The plain origin's port on 127.0.0.3. */
  plainPort: number;
  /** `Authorization` headers the TLS origin received, in order. */
  seenTls: (string | null)[];
  /** `Authorization` headers the plain origin received, in order. */
  seenPlain: (string | null)[];
  /** Stop both. */
  close(): Promise<void>;
}

/** Start both origins. */
export async function startSecretOrigins(): Promise<SecretOrigins> {
  const upstreamCa = await EgressCa.create("test origin");
  const { cert, key } = await upstreamCa.leaf("api.secret.test");
  const seenTls: (string | null)[] = [];
  const tls = Deno.serve(
    { hostname: "127.0.0.2", port: 0, cert, key, onListen: () => {} },
    (req) => {
      seenTls.push(req.headers.get("authorization"));
      return new Response("ok");
    },
  );
  const seenPlain: (string | null)[] = [];
  const plain = Deno.serve({ hostname: "127.0.0.3", port: 0, onListen: () => {} }, (req) => {
    seenPlain.push(req.headers.get("authorization"));
    return new Response("plain");
  });
  return {
    caPem: upstreamCa.certPem,
    tlsPort: tls.addr.port,
    plainPort: plain.addr.port,
    seenTls,
    seenPlain,
    close: async () => {
      await tls.shutdown();
      await plain.shutdown();
    },
  };
}
