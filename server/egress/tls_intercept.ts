/**
 * TLS interception for credentials that never enter the sandbox: for a host a secret is
 * attached to, the proxy ends the client's TLS itself with a certificate for that host signed by
 * the sandbox's own certificate authority (which the sandbox trusts, and no other sandbox
 * does), reads the request head, replaces the placeholder with the real secret in its header
 * values, and sends it on over a TLS connection of its own to the address it checked, verifying
 * the real host's certificate against the system's roots (and the rules' `ca`).
 *
 * Certificates are made with `@peculiar/x509` (1.x, on WebCrypto: ECDSA P-256; the 2.x line
 * needs a global `reflect-metadata` polyfill); the TLS is Deno's (`Deno.listenTls` on loopback
 * for the client's side, one listener per intercepted connection, and `Deno.startTls` for the
 * host's side), offering HTTP/1.1 only. One request per connection: the head sent on says
 * `Connection: close`.
 *
 * @module
 */

// The full specifier, not the import map's name: the local provider's supervisor, which makes
// the CA, runs with `--no-config` (the caller's configuration must not change it). Keep it equal
// to the `@peculiar/x509` entry of deno.json.
// deno-lint-ignore no-import-prefix
import * as x509 from "npm:@peculiar/x509@1.14.3";
import { closeQuietly, copyThenCloseWrite, writeAll } from "./conn_copy.ts";
import { ConnReader } from "./conn_reader.ts";
import type { SecretRule } from "./rules.ts";

x509.cryptoProvider.set(crypto);

const ALG = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
const DAY = 86_400_000;
const HEAD_END = new TextEncoder().encode("\r\n\r\n");
const encoder = new TextEncoder();

function pem(label: string, der: ArrayBuffer): string {
  const b64 = btoa(String.fromCharCode(...new Uint8Array(der)));
  return `-----BEGIN ${label}-----\n${b64.match(/.{1,64}/g)!.join("\n")}\n-----END ${label}-----\n`;
}

function serial(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[0] &= 0x7f;
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/**
 * A certificate authority of one sandbox: its key stays in this process; its certificate is
 * what the sandbox trusts.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { EgressCa } from "./tls_intercept.ts";
 * const ca = await EgressCa.create("sandbox abc");
 * assert.match(ca.certPem, /^-----BEGIN CERTIFICATE-----/);
 * const leaf = await ca.leaf("api.example.com");
 * assert.match(leaf.key, /PRIVATE KEY/);
 * ```
 */
export class EgressCa {
  /** The CA's certificate (PEM). */
  readonly certPem: string;
  readonly #cert: x509.X509Certificate;
  readonly #key: CryptoKey;
  readonly #leaves = new Map<string, Promise<{ cert: string; key: string }>>();

  private constructor(cert: x509.X509Certificate, key: CryptoKey) {
    this.#cert = cert;
    this.#key = key;
    this.certPem = cert.toString("pem");
  }

  /** A new CA named after `name`, valid for 30 days. */
  static async create(name: string): Promise<EgressCa> {
    const keys = await crypto.subtle.generateKey(ALG, false, ["sign", "verify"]) as CryptoKeyPair;
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: `CN=sandbar egress CA (${name.replace(/[,=+<>#;"\\]/g, "")})`,
      notBefore: new Date(Date.now() - DAY),
      notAfter: new Date(Date.now() + 30 * DAY),
      keys,
      signingAlgorithm: ALG,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
          true,
        ),
      ],
    });
    return new EgressCa(cert, keys.privateKey);
  }

  /** A certificate and key for `host` (made once, then kept). */
  leaf(host: string): Promise<{ cert: string; key: string }> {
    let made = this.#leaves.get(host);
    if (!made) {
      made = (async () => {
        const keys = await crypto.subtle.generateKey(ALG, true, [
          "sign",
          "verify",
        ]) as CryptoKeyPair;
        const cert = await x509.X509CertificateGenerator.create({
          serialNumber: serial(),
          subject: `CN=${host}`,
          issuer: this.#cert.subject,
          notBefore: new Date(Date.now() - DAY),
          notAfter: new Date(Date.now() + 30 * DAY),
          publicKey: keys.publicKey,
          signingKey: this.#key,
          signingAlgorithm: ALG,
          extensions: [
            new x509.SubjectAlternativeNameExtension([{ type: "dns", value: host }]),
            new x509.BasicConstraintsExtension(false),
            new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
          ],
        });
        const key = pem("PRIVATE KEY", await crypto.subtle.exportKey("pkcs8", keys.privateKey));
        return { cert: cert.toString("pem"), key };
      })();
      this.#leaves.set(host, made);
    }
    return made;
  }
}

/** Replace every placeholder in the header values of a request head (never the request line). */
export function swapPlaceholders(head: string, secrets: readonly SecretRule[]): string {
  const lines = head.split("\r\n");
  for (let i = 1; i < lines.length; i++) {
    const colon = lines[i].indexOf(":");
    if (colon < 0) continue;
    let value = lines[i].slice(colon + 1);
    for (const s of secrets) if (s.placeholder) value = value.replaceAll(s.placeholder, s.value);
    lines[i] = lines[i].slice(0, colon + 1) + value;
  }
  return lines.join("\r\n");
}

/** The answer is in: end the client's TLS, and let what is in flight reach the client. */
async function drain(tls: Deno.TlsConn, toClient: Promise<void>): Promise<void> {
  try {
    await tls.closeWrite();
  } catch { /* closed */ }
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([toClient, new Promise((r) => timer = setTimeout(r, 5000))]);
  clearTimeout(timer);
}

/** Hop-by-hop headers the intercepting proxy drops (it sends `Connection: close`). */
const HOP = /^(connection|keep-alive|proxy-connection|te|trailer|upgrade)\s*:/i;

/**
 * Serve one intercepted tunnel: `client` is the tunnel's client side (its first bytes, a TLS
 * ClientHello, in `early`), `upstream` a TCP connection to the checked address of `host`.
 * Resolves when both sides are done; closes everything it was given.
 */
export async function interceptTunnel(
  ca: EgressCa,
  extraRoots: readonly string[],
  host: string,
  client: Deno.Conn,
  early: Uint8Array,
  upstream: Deno.TcpConn,
  secrets: readonly SecretRule[],
  track: (conns: Deno.Conn[]) => void,
): Promise<void> {
  const { cert, key } = await ca.leaf(host);
  const listener = Deno.listenTls({
    hostname: "127.0.0.1",
    port: 0,
    cert,
    key,
    alpnProtocols: ["http/1.1"],
  });
  let inner: Deno.TcpConn | undefined;
  let tls: Deno.TlsConn | undefined;
  let upstreamTls: Deno.TlsConn | undefined;
  try {
    inner = await Deno.connect({ hostname: "127.0.0.1", port: listener.addr.port });
    const ours = inner.localAddr.port;
    // Only our own connection: anything else that reached the port first is turned away.
    for (;;) {
      const accepted = await listener.accept();
      if ((accepted.remoteAddr as Deno.NetAddr).port === ours) {
        tls = accepted;
        break;
      }
      closeQuietly(accepted);
    }
    listener.close();
    track([client, inner, tls, upstream]);
    if (early.length > 0) await writeAll(inner, early);
    copyThenCloseWrite(client, inner);
    const toClient = copyThenCloseWrite(inner, client);
    await tls.handshake();
    const reader = new ConnReader(tls);
    const head = await reader.until(HEAD_END, 64 * 1024);
    if (!head) return;
    const text = new TextDecoder().decode(head.subarray(0, head.length - 4));
    const lines = swapPlaceholders(text, secrets).split("\r\n").filter((l, i) =>
      i === 0 || (l !== "" && !HOP.test(l))
    );
    try {
      upstreamTls = await Deno.startTls(upstream, { hostname: host, caCerts: [...extraRoots] });
      await upstreamTls.handshake();
    } catch (e) {
      const why = `the host ${host} failed TLS verification: ${(e as Error).message}`.slice(0, 300);
      const body = encoder.encode(`${why}\n`);
      await writeAll(
        tls,
        encoder.encode(
          `HTTP/1.1 502 Bad Gateway\r\nX-Sandbar-Egress-Rule: tls\r\nContent-Length: ${body.length}\r\n` +
            `Connection: close\r\n\r\n`,
        ),
      );
      await writeAll(tls, body);
      return await drain(tls, toClient);
    }
    track([upstreamTls]);
    await writeAll(
      upstreamTls,
      encoder.encode(`${lines.join("\r\n")}\r\nConnection: close\r\n\r\n`),
    );
    const rest = reader.rest();
    if (rest.length > 0) await writeAll(upstreamTls, rest);
    copyThenCloseWrite(tls, upstreamTls);
    await copyThenCloseWrite(upstreamTls, tls);
    await drain(tls, toClient);
  } finally {
    try {
      listener.close();
    } catch { /* closed */ }
    for (const c of [tls, inner, upstreamTls, upstream, client]) closeQuietly(c);
  }
}
