// The baseline for the pipeline bench: a bare Deno.serve answering what GET /commands answers
// on a server with no named commands.
const body = JSON.stringify({ commands: [] });
const server = Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(JSON.stringify({ event: "listening", port })),
}, () => new Response(body, { headers: { "content-type": "application/json" } }));
Deno.addSignalListener("SIGTERM", () => server.shutdown());
await server.finished;
