/**
 * The network benchmark's "internet": a server on 127.0.0.2 with `/big?mb=N` (N MiB of zeros)
 * and `/small` (a few bytes). Prints `{"port":…}` once listening.
 *
 * @module
 */

const CHUNK = new Uint8Array(256 * 1024);

Deno.serve({
  hostname: "127.0.0.2",
  port: 0,
  onListen: ({ port }) => console.log(JSON.stringify({ port })),
}, (req) => {
  const url = new URL(req.url);
  if (url.pathname === "/small") return new Response("ok");
  const chunks = Number(url.searchParams.get("mb") ?? "64") * 4;
  let sent = 0;
  return new Response(
    new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent++ >= chunks) c.close();
        else c.enqueue(CHUNK);
      },
    }),
    { headers: { "content-length": String(chunks * CHUNK.length) } },
  );
});
