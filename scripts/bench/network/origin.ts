/**
 * The network benchmark's "internet": a server on 127.0.0.2 with `/big?mb=N` (N MiB of zeros;
 * `&pace=R` sends it at R MB/s at most, as a link of that speed would) and `/small` (a few
 * bytes). Over TLS when given a certificate and key (PEM files). Prints `{"port":…}` once
 * listening.
 *
 * ```sh
 * deno run -A origin.ts [cert.pem key.pem]
 * ```
 *
 * @module
 */

const CHUNK = new Uint8Array(256 * 1024);
const [certFile, keyFile] = Deno.args;
const tls = certFile && keyFile
  ? { cert: Deno.readTextFileSync(certFile), key: Deno.readTextFileSync(keyFile) }
  : {};

Deno.serve({
  hostname: "127.0.0.2",
  port: 0,
  ...tls,
  onListen: ({ port }) => console.log(JSON.stringify({ port })),
}, (req) => {
  const url = new URL(req.url);
  if (url.pathname === "/small") return new Response("ok");
  const chunks = Number(url.searchParams.get("mb") ?? "64") * 4;
  const bytesPerMs = Number(url.searchParams.get("pace") ?? "0") * 1000;
  const start = performance.now();
  let sent = 0;
  return new Response(
    new ReadableStream<Uint8Array>({
      async pull(c) {
        if (sent >= chunks) return c.close();
        if (bytesPerMs > 0) {
          const due = start + (sent * CHUNK.length) / bytesPerMs;
          const wait = due - performance.now();
          if (wait > 1) await new Promise((r) => setTimeout(r, wait));
        }
        sent++;
        c.enqueue(CHUNK);
      },
    }),
    { headers: { "content-length": String(chunks * CHUNK.length) } },
  );
});
