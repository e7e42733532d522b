/**
 * A process the server starts cannot reach the server. On TCP it cannot open a connection to the
 * server's own ports (the API and the PTY WebSocket), on any address, while every other port
 * stays reachable: the kernel (Landlock's network rules) refuses the `connect`, so no command
 * string or program gets round it. With confinement off the same connections open, which shows
 * what holds them. On abstract sockets (`--abstract-sockets`, Landlock ABI 6) the kernel refuses
 * the `connect` to the sockets, and no TCP port is closed any more (there is none of the
 * server's to close).
 */

import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";
import { startServer } from "../../server/serve.ts";
import { landlockAbi } from "../../server/confine/landlock.ts";

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

const python = await new Deno.Command("python3", { args: ["-c", ""] }).output().then(
  (o) => o.success,
  () => false,
);

Deno.test({
  name: "on abstract sockets: a confined process cannot connect to them, and no port is closed",
  // Needs python3 (the probe) and Landlock ABI 6 (abstract socket scoping).
  ignore: !python || landlockAbi() < 6,
  fn: async () => {
    const root = await Deno.makeTempDir();
    // The ports it would have had on TCP: free, and left free.
    const [api, pty] = freePorts();
    const server = await startServer({
      port: api,
      ptyPort: pty,
      abstractSockets: true,
      root,
      env: {},
      audit: () => {},
    });
    const names = [server.url, server.ptyUrl].map((u) =>
      decodeURIComponent(u.replace(/^(http|ws)\+unix:\/\//, ""))
    );
    try {
      assert.match(names[0], new RegExp(`^@sandbar-[0-9a-f]{32}-${api}$`));
      assert.match(names[1], new RegExp(`^@sandbar-[0-9a-f]{32}-${pty}$`));
      const client = Deno.createHttpClient({
        proxy: { transport: "unix", path: "\0" + names[0].slice(1) },
      });
      const script = `
import socket, sys
for name in sys.argv[1:3]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect("\\0" + name[1:]); print("connected")
    except OSError as e:
        print("refused", e.errno)
for port in sys.argv[3:]:
    s = socket.socket()
    s.bind(("127.0.0.1", int(port))); s.listen(); print(port, "bound")
`;
      const file = `${root}/probe.py`;
      await Deno.writeTextFile(file, script);
      const res = await fetch("http://localhost/process/shell", {
        client,
        method: "POST",
        headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
        body: JSON.stringify({ cmd: `python3 ${file} ${names.join(" ")} ${api} ${pty}` }),
      });
      const body = await res.json();
      client.close();
      assert.equal(body.stdout, `refused 1\nrefused 1\n${api} bound\n${pty} bound\n`, body.stderr);
    } finally {
      await server.close();
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "on abstract sockets with a network section: connect only to the egress proxy, bind is free",
  // Needs python3 (the probe) and Landlock ABI 6 (abstract socket scoping).
  ignore: !python || landlockAbi() < 6,
  fn: async () => {
    const root = await Deno.makeTempDir();
    // "The internet" (allowed by the rule), and another loopback service (not the proxy).
    const origin = Deno.serve(
      { hostname: "127.0.0.2", port: 0, onListen: () => {} },
      () => new Response("hello from the internet"),
    );
    const other = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const server = await startServer({
      port: 0,
      ptyPort: 0,
      abstractSockets: true,
      root,
      env: {},
      audit: () => {},
      policy: { network: { allow: ["127.0.0.2"] } },
    });
    const name = decodeURIComponent(server.url.replace(/^http\+unix:\/\//, ""));
    const client = Deno.createHttpClient({
      proxy: { transport: "unix", path: "\0" + name.slice(1) },
    });
    try {
      const script = `
import os, socket, sys, urllib.request
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\\0" + sys.argv[1][1:]); print("server: connected")
except OSError as e:
    print("server: refused", e.errno)
print(urllib.request.urlopen("http://127.0.0.2:" + sys.argv[2] + "/").read().decode())
s = socket.socket()
try:
    s.connect(("127.0.0.1", int(sys.argv[3]))); print("direct: connected")
except OSError as e:
    print("direct: refused", e.errno)
b = socket.socket(); b.bind(("127.0.0.1", 0)); b.listen(); print("bind: ok")
`;
      const file = `${root}/probe.py`;
      await Deno.writeTextFile(file, script);
      const res = await fetch("http://localhost/process/shell", {
        client,
        method: "POST",
        headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
        body: JSON.stringify({
          cmd: `python3 ${file} ${name} ${origin.addr.port} ${other.addr.port}`,
          timeout: 20,
        }),
      });
      const body = await res.json();
      // EPERM from the scoping, the page through the identity's proxy, EACCES from Landlock.
      assert.equal(
        body.stdout,
        "server: refused 1\nhello from the internet\ndirect: refused 13\nbind: ok\n",
        body.stderr,
      );
    } finally {
      client.close();
      await server.close();
      other.close();
      await origin.shutdown();
      await Deno.remove(root, { recursive: true });
    }
  },
});
