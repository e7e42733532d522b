/**
 * The network benchmark's client for small requests: `n` requests, each on a new connection
 * (`Connection: close`), one after another, either straight to the origin or through the proxy
 * (an absolute URL, as `HTTP_PROXY` clients send). Prints `{"p50Ms":…,"rps":…}`.
 *
 * ```sh
 * deno run -A client.ts <n> <origin port> [proxy port]
 * ```
 *
 * @module
 */

const [n, originPort, proxyPort] = Deno.args.map(Number);
const target = proxyPort ? { hostname: "127.0.0.1", port: proxyPort } : {
  hostname: "127.0.0.2",
  port: originPort,
};
const path = proxyPort ? `http://127.0.0.2:${originPort}/small` : "/small";
const request = new TextEncoder().encode(
  `GET ${path} HTTP/1.1\r\nHost: 127.0.0.2:${originPort}\r\nConnection: close\r\n\r\n`,
);
const buf = new Uint8Array(4096);
const times: number[] = [];
const start = performance.now();
for (let i = 0; i < n; i++) {
  const t0 = performance.now();
  const conn = await Deno.connect(target);
  await conn.write(request);
  let text = "";
  for (;;) {
    const got = await conn.read(buf);
    if (got === null) break;
    text += new TextDecoder().decode(buf.subarray(0, got));
  }
  conn.close();
  if (!text.startsWith("HTTP/1.1 200")) throw new Error(`unexpected answer: ${text.slice(0, 80)}`);
  times.push(performance.now() - t0);
}
const total = performance.now() - start;
times.sort((a, b) => a - b);
console.log(JSON.stringify({ p50Ms: times[Math.floor(n / 2)], rps: n / (total / 1000) }));
