/**
 * A process the server starts cannot open a TCP connection to the server's own ports (the API
 * and the PTY WebSocket), on any address, while every other port stays reachable: the kernel
 * (Landlock's network rules) refuses the `connect`, so no command string or program gets round
 * it. With confinement off the same connections open, which shows what holds them.
 */

import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";

function probe(port: number | string, host = "127.0.0.1"): string {
  return `(exec 3<>/dev/tcp/${host}/${port}) 2>/dev/null && echo ${port}:open || echo ${port}:refused`;
}

Deno.test("a confined process cannot connect to the server's ports; other ports are open", async () => {
  // A listener of the test's own, standing for any other service on the machine.
  const other = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    for (const confined of [true, false]) {
      await using server = await startTestServer({
        env: confined ? {} : { SANDBAR_CONFINEMENT: "off" },
      });
      const api = new URL(server.url).port;
      const pty = new URL(server.ptyUrl).port;
      const cmd = [probe(api), probe(pty), probe(api, "localhost"), probe(other.addr.port)]
        .join("; ");
      const body = await (await server.post("/process/shell", { cmd })).json();
      const verdict = confined ? "refused" : "open";
      assert.equal(
        body.stdout,
        `${api}:${verdict}\n${pty}:${verdict}\n${api}:${verdict}\n${other.addr.port}:open\n`,
        `confined: ${confined}`,
      );
    }
  } finally {
    other.close();
  }
});

/** Two ports free now, by number. */
function freePorts(): [number, number] {
  const a = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const b = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const ports: [number, number] = [a.addr.port, b.addr.port];
  a.close();
  b.close();
  return ports;
}

Deno.test("ports given by number are closed too: the confinement made before listening", async () => {
  // A local sandbox's server is started so (9000 and 9001): its default identity's confinement
  // is made before it listens, from the ports asked for rather than those bound.
  const [api, pty] = freePorts();
  await using server = await startTestServer({
    args: ["--port", String(api), "--pty-port", String(pty)],
  });
  assert.equal(new URL(server.url).port, String(api));
  assert.equal(new URL(server.ptyUrl).port, String(pty));
  const other = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const cmd = [probe(api), probe(pty), probe(api, "localhost"), probe(other.addr.port)].join(
      "; ",
    );
    const body = await (await server.post("/process/shell", { cmd })).json();
    assert.equal(
      body.stdout,
      `${api}:refused\n${pty}:refused\n${api}:refused\n${other.addr.port}:open\n`,
    );
  } finally {
    other.close();
  }
});
