/**
 * The egress proxy on its own, driven by the clients programs use (curl, Deno's fetch, raw
 * CONNECT and TLS): "the internet" is servers this test starts on 127.0.0.2 and 127.0.0.3,
 * which a rule names explicitly (loopback is refused unless named). No traffic leaves
 * 127.0.0.0/8.
 */

import assert from "node:assert/strict";
import type { AuditEntry } from "../../server/pipeline/audit.ts";
import { EgressProxy } from "../../server/egress/proxy.ts";
import { NetworkRules, parseNetworkRule } from "../../server/egress/rules.ts";
import { EgressCa } from "../../server/egress/tls_intercept.ts";

/** An HTTP server on `hostname` answering `hello from <hostname>` (and `/slow`: a stream). */
function origin(hostname: string) {
  const seen: Request[] = [];
  const auth: (string | null)[] = [];
  const server = Deno.serve({ hostname, port: 0, onListen: () => {} }, (req) => {
    seen.push(req);
    auth.push(req.headers.get("authorization"));
    if (new URL(req.url).pathname === "/slow") {
      let timer: ReturnType<typeof setInterval>;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          timer = setInterval(() => controller.enqueue(new Uint8Array(1024)), 20);
        },
        cancel() {
          clearInterval(timer);
        },
      });
      return new Response(body);
    }
    return new Response(`hello from ${hostname}`);
  });
  return { server, port: server.addr.port, seen, auth };
}

function startProxy(config: Parameters<typeof NetworkRules.compile>[0]) {
  const audit: AuditEntry[] = [];
  const proxy = EgressProxy.listen({ hostname: "127.0.0.1", port: 0 }, {
    identity: "tester",
    rules: NetworkRules.compile(config),
    audit: (e) => audit.push(e),
  });
  return { proxy, audit, url: `http://127.0.0.1:${proxy.port}` };
}

async function curl(...args: string[]) {
  const out = await new Deno.Command("curl", {
    args: ["-sS", "--max-time", "10", ...args],
    stdout: "piped",
    stderr: "piped",
    env: { NO_PROXY: "", no_proxy: "" },
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

Deno.test("network rules: syntax, deny wins, private ranges only when named", () => {
  assert.deepEqual(parseNetworkRule("[::1]:22").ports, [22, 22]);
  assert.equal(parseNetworkRule("fd00::/8").host.kind, "network");
  for (
    const bad of ["", "a*b.com", "example.com:0", "example.com:9-1", "example.com/8", "1.2.3.4/33"]
  ) {
    assert.throws(() => parseNetworkRule(bad), Error, bad);
  }
  assert.throws(() => NetworkRules.compile({ alow: [] } as never), /unknown key "alow"/);
  const rules = NetworkRules.compile({
    allow: ["*.example.com", "127.0.0.2", "10.0.0.0/8:22", "203.0.113.0/24"],
    deny: ["secret.example.com", "*:25"],
  });
  const d = (host: string, port: number, addresses: string[] = []) =>
    rules.decide(host, port, addresses).rule;
  assert.equal(d("a.example.com", 443, ["93.184.215.14"]), "allow:*.example.com");
  assert.equal(d("secret.example.com", 443), "deny:secret.example.com");
  assert.equal(d("a.example.com", 25), "deny:*:25", "deny wins over allow");
  assert.equal(d("example.org", 443), "allow");
  assert.equal(d("127.0.0.2", 80, ["127.0.0.2"]), "allow:127.0.0.2");
  assert.equal(d("10.1.2.3", 22, ["10.1.2.3"]), "allow:10.0.0.0/8:22");
  assert.equal(d("10.1.2.3", 80, ["10.1.2.3"]), "allow");
  // A name that resolves into an allowed private network is not named by it (rebinding).
  const byNetwork = NetworkRules.compile({ allow: ["10.0.0.0/8"] });
  assert.equal(byNetwork.decide("rebound.example", 80, ["10.0.0.5"]).rule, "private:private");
  assert.equal(d("127.0.0.3", 80, ["127.0.0.3"]), "allow", "127.0.0.2 names only itself");
  const open = NetworkRules.compile({});
  assert.equal(open.decide("169.254.169.254", 80, ["169.254.169.254"]).rule, "private:link-local");
  assert.equal(open.decide("localhost", 80, []).rule, "private:loopback");
  assert.equal(open.decide("x.localhost", 80, []).rule, "private:loopback");
  assert.equal(open.decide("[::ffff:127.0.0.1]", 80, []).rule, "private:loopback");
  assert.equal(open.decide("example.com", 443, ["93.184.215.14"]).rule, "public");
  assert.equal(NetworkRules.off().decide("example.com", 443, []).rule, "network:off");
});

Deno.test("egress proxy: curl over HTTP and SOCKS reaches an allowed host; others are refused and audited", async () => {
  const allowed = origin("127.0.0.2");
  const other = origin("127.0.0.3");
  const { proxy, audit, url } = startProxy({
    allow: ["127.0.0.2", "127.0.0.3", "named.test"],
    deny: ["127.0.0.3"],
    hosts: { "named.test": "127.0.0.2", "rebound.test": "127.0.0.2" },
  });
  try {
    const ok = await curl("-x", url, `http://127.0.0.2:${allowed.port}/x`);
    assert.equal(ok.stdout, "hello from 127.0.0.2");
    const byName = await curl("-x", url, `http://named.test:${allowed.port}/`);
    assert.equal(
      byName.stdout,
      "hello from 127.0.0.2",
      "a name the rules name, resolved by the proxy",
    );
    const socks = await curl(
      "--socks5-hostname",
      proxy.port.toString().replace(/^/, "127.0.0.1:"),
      `http://named.test:${allowed.port}/`,
    );
    assert.equal(socks.stdout, "hello from 127.0.0.2");

    const denied = await curl("-i", "-x", url, `http://127.0.0.3:${other.port}/`);
    assert.match(denied.stdout, /^HTTP\/1\.1 403/);
    assert.match(denied.stdout, /X-Sandbar-Egress-Rule: deny:127\.0\.0\.3/i);
    const notListed = await curl("-i", "-x", url, `http://127.0.0.4:${other.port}/`);
    assert.match(notListed.stdout, /X-Sandbar-Egress-Rule: allow\r/i);
    const rebound = await curl("-i", "-x", url, `http://rebound.test:${allowed.port}/`);
    assert.match(rebound.stdout, /X-Sandbar-Egress-Rule: allow\r/i, "not on the list");
    const socksDenied = await curl(
      "--socks5-hostname",
      `127.0.0.1:${proxy.port}`,
      `http://127.0.0.3:${other.port}/`,
    );
    assert.equal(socksDenied.code, 97, "curl: the SOCKS proxy refused");
    const tunnelDenied = await curl("-p", "-x", url, `http://127.0.0.3:${other.port}/`);
    assert.match(tunnelDenied.stderr, /CONNECT tunnel failed, response 403/);
    assert.equal(other.seen.length, 0, "nothing reached the denied host");

    const lines = audit.map((e) => `${e.decision} ${e.host}:${e.port} ${e.rule}`);
    assert.deepEqual(lines, [
      `allow 127.0.0.2:${allowed.port} allow:127.0.0.2`,
      `allow named.test:${allowed.port} allow:named.test`,
      `allow named.test:${allowed.port} allow:named.test`,
      `deny 127.0.0.3:${other.port} deny:127.0.0.3`,
      `deny 127.0.0.4:${other.port} allow`,
      `deny rebound.test:${allowed.port} allow`,
      `deny 127.0.0.3:${other.port} deny:127.0.0.3`,
      `deny 127.0.0.3:${other.port} deny:127.0.0.3`,
    ]);
    assert.ok(audit.every((e) => e.identity === "tester" && e.endpoint === "egress"));
  } finally {
    await proxy.close();
    await allowed.server.shutdown();
    await other.server.shutdown();
  }
});

Deno.test("egress proxy: private addresses and loopback names are refused unless a rule names them", async () => {
  const target = origin("127.0.0.2");
  const { proxy, audit, url } = startProxy({ hosts: { "api.test": "127.0.0.2" } });
  try {
    for (
      const host of [
        "127.0.0.2",
        "localhost",
        "x.localhost",
        "api.test",
        "169.254.169.254",
        "10.0.0.1",
      ]
    ) {
      const r = await curl("-i", "-x", url, `http://${host}:${target.port}/`);
      assert.match(r.stdout, /^HTTP\/1\.1 403/, host);
      assert.match(r.stdout, /X-Sandbar-Egress-Rule: private:/i, host);
    }
    assert.equal(target.seen.length, 0);
    assert.deepEqual(audit.map((e) => e.rule), [
      "private:loopback",
      "private:loopback",
      "private:loopback",
      "private:loopback",
      "private:link-local",
      "private:private",
    ]);
    // Named by a rule, the same name goes through.
    proxy.update(NetworkRules.compile({ allow: ["api.test"], hosts: { "api.test": "127.0.0.2" } }));
    const r = await curl("-x", url, `http://api.test:${target.port}/`);
    assert.equal(r.stdout, "hello from 127.0.0.2");
  } finally {
    await proxy.close();
    await target.server.shutdown();
  }
});

Deno.test("egress proxy: a CONNECT whose TLS server name differs from its host is closed before anything reaches the host", async () => {
  const received: number[] = [];
  const upstream = Deno.listen({ hostname: "127.0.0.2", port: 0 });
  const port = (upstream.addr as Deno.NetAddr).port;
  const serving = (async () => {
    for await (const conn of upstream) {
      // The first read: a ClientHello, or the end when the proxy closed the tunnel.
      const n = await conn.read(new Uint8Array(16384)).catch(() => null);
      received.push(n ?? 0);
      conn.close();
    }
  })();
  const { proxy, audit } = startProxy({
    allow: ["tls.test"],
    hosts: { "tls.test": "127.0.0.2" },
  });
  const tunnel = async (serverName: string) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
    await conn.write(new TextEncoder().encode(`CONNECT tls.test:${port} HTTP/1.1\r\n\r\n`));
    const head = new Uint8Array(100);
    const n = await conn.read(head);
    assert.match(new TextDecoder().decode(head.subarray(0, n!)), /^HTTP\/1\.1 200/);
    const tls = await Deno.startTls(conn, { hostname: serverName });
    await assert.rejects(tls.handshake()); // no TLS server there either way
    try {
      tls.close();
    } catch { /* closed by the failed handshake */ }
  };
  try {
    await tunnel("evil.example");
    await tunnel("tls.test");
    for (let i = 0; i < 100 && received.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(received.length, 2);
    assert.equal(received[0], 0, "the mismatched hello never reached the host");
    assert.ok(received[1] > 100, "the matching hello did");
    assert.deepEqual(audit.map((e) => `${e.decision} ${e.rule}`), [
      "allow allow:tls.test",
      "deny sni",
      "allow allow:tls.test",
    ]);
  } finally {
    await proxy.close();
    upstream.close();
    await serving;
  }
});

Deno.test("egress proxy: a rule changed while a download runs cuts it off, and new connections use it", async () => {
  const target = origin("127.0.0.2");
  const { proxy, audit, url } = startProxy({ allow: ["127.0.0.2"] });
  const client = Deno.createHttpClient({ proxy: { url } });
  try {
    const res = await fetch(`http://127.0.0.2:${target.port}/slow`, { client });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    let got = 0;
    while (got < 4096) got += (await reader.read()).value?.length ?? 0;
    assert.equal(proxy.openConnections, 1);
    assert.equal(proxy.update(NetworkRules.compile({ allow: ["127.0.0.3"] })), 1);
    await assert.rejects(async () => {
      for (;;) if ((await reader.read()).done) throw new Error("ended");
    });
    assert.equal(proxy.openConnections, 0);
    const again = await fetch(`http://127.0.0.2:${target.port}/`, { client });
    assert.equal(again.status, 403);
    await again.body?.cancel();
    assert.deepEqual(audit.map((e) => `${e.decision} ${e.code} ${e.rule}`), [
      "allow null allow:127.0.0.2",
      "deny egress_closed allow",
      "deny egress_denied allow",
    ]);
  } finally {
    client.close();
    await proxy.close();
    await target.server.shutdown();
  }
});

Deno.test("egress proxy: a secret's placeholder is swapped for the real value at its host only, over TLS the proxy verifies", async () => {
  const upstreamCa = await EgressCa.create("test origin");
  const { cert, key } = await upstreamCa.leaf("api.secret.test");
  const seen: string[] = [];
  const tlsOrigin = Deno.serve(
    { hostname: "127.0.0.2", port: 0, cert, key, onListen: () => {} },
    (req) => {
      seen.push(`tls ${req.headers.get("authorization")}`);
      return new Response("ok");
    },
  );
  const plain = origin("127.0.0.3");
  const placeholder = "sandbar-placeholder-0123456789abcdef";
  const sandboxCa = await EgressCa.create("sandbox one");
  const otherCa = await EgressCa.create("sandbox two");
  const audit: AuditEntry[] = [];
  const proxy = EgressProxy.listen({ hostname: "127.0.0.1", port: 0 }, {
    identity: "tester",
    rules: NetworkRules.compile({
      allow: ["api.secret.test", "127.0.0.3"],
      hosts: { "api.secret.test": "127.0.0.2" },
      secrets: [{
        host: "api.secret.test",
        env: "API_TOKEN",
        value: "real-secret-value",
        placeholder,
      }],
      ca: [upstreamCa.certPem],
    }),
    audit: (e) => audit.push(e),
    ca: sandboxCa,
  });
  const dir = await Deno.makeTempDir({ prefix: "sandbar-egress-ca-" });
  try {
    await Deno.writeTextFile(`${dir}/ca.pem`, sandboxCa.certPem);
    await Deno.writeTextFile(`${dir}/other.pem`, otherCa.certPem);
    const url = `https://api.secret.test:${tlsOrigin.addr.port}/`;
    const via = [
      "-x",
      `http://127.0.0.1:${proxy.port}`,
      "-H",
      `Authorization: Bearer ${placeholder}`,
    ];
    const ok = await curl(...via, "--cacert", `${dir}/ca.pem`, url);
    assert.equal(ok.stdout, "ok", ok.stderr);
    assert.deepEqual(seen, ["tls Bearer real-secret-value"]);
    // Another sandbox's authority is not trusted for it.
    const other = await curl(...via, "--cacert", `${dir}/other.pem`, url);
    assert.equal(other.code, 60, other.stderr);
    // Any other host sees the placeholder only.
    await curl(...via, `http://127.0.0.3:${plain.port}/`);
    assert.deepEqual(plain.auth, [`Bearer ${placeholder}`]);
    assert.ok(!audit.some((e) => JSON.stringify(e).includes("real-secret-value")));
  } finally {
    await proxy.close();
    await tlsOrigin.shutdown();
    await plain.server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("egress proxy: an intercepted host whose certificate the proxy cannot verify gets a 502", async () => {
  const untrusted = await EgressCa.create("unknown issuer");
  const { cert, key } = await untrusted.leaf("api.secret.test");
  const tlsOrigin = Deno.serve(
    { hostname: "127.0.0.2", port: 0, cert, key, onListen: () => {} },
    () => new Response("should not be reached"),
  );
  const sandboxCa = await EgressCa.create("sandbox");
  const proxy = EgressProxy.listen({ hostname: "127.0.0.1", port: 0 }, {
    identity: "tester",
    rules: NetworkRules.compile({
      allow: ["api.secret.test"],
      hosts: { "api.secret.test": "127.0.0.2" },
      secrets: [{
        host: "api.secret.test",
        env: "T",
        value: "v-secret",
        placeholder: "placeholder-0123456789",
      }],
    }),
    ca: sandboxCa,
  });
  const dir = await Deno.makeTempDir({ prefix: "sandbar-egress-ca-" });
  try {
    await Deno.writeTextFile(`${dir}/ca.pem`, sandboxCa.certPem);
    const r = await curl(
      "-i",
      "-x",
      `http://127.0.0.1:${proxy.port}`,
      "--cacert",
      `${dir}/ca.pem`,
      `https://api.secret.test:${tlsOrigin.addr.port}/`,
    );
    assert.match(r.stdout, /^HTTP\/1\.1 502 /m, r.stderr);
    assert.match(r.stdout, /X-Sandbar-Egress-Rule: tls/);
  } finally {
    await proxy.close();
    await tlsOrigin.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("egress proxy: a client that never says where it goes is closed, and so is a tunnel whose client sends nothing", async () => {
  const target = origin("127.0.0.2");
  const proxy = EgressProxy.listen({ hostname: "127.0.0.1", port: 0 }, {
    identity: "tester",
    rules: NetworkRules.compile({ allow: ["127.0.0.2"] }),
    handshakeTimeoutMs: 200,
  });
  const ends = async (conn: Deno.Conn) => {
    const buf = new Uint8Array(256);
    while ((await conn.read(buf).catch(() => null)) !== null) { /* until closed */ }
    conn.close();
  };
  try {
    const silent = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
    await ends(silent);
    const tunnel = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
    await tunnel.write(
      new TextEncoder().encode(`CONNECT 127.0.0.2:${target.port} HTTP/1.1\r\n\r\n`),
    );
    await ends(tunnel);
    assert.equal(proxy.openConnections, 0);
  } finally {
    await proxy.close();
    await target.server.shutdown();
  }
});

Deno.test("egress proxy: a large body arrives whole and unchanged both ways, over plain HTTP, CONNECT, SOCKS and an intercepted tunnel", async () => {
  // 12 MiB of varied bytes: the copy's buffer grows from 64 KiB to 1 MiB while it moves them.
  const body = new Uint8Array(12 * 1024 * 1024);
  for (let i = 0; i < body.length; i += 65536) {
    crypto.getRandomValues(body.subarray(i, i + 65536));
  }
  const hex = async (bytes: Uint8Array<ArrayBuffer>) =>
    Array.from(
      new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)),
      (b) => b.toString(16).padStart(2, "0"),
    ).join("");
  const want = await hex(body);
  const handler = async (req: Request) =>
    req.method === "POST"
      ? new Response(await hex(new Uint8Array(await req.arrayBuffer())))
      : new Response(body);
  const plain = Deno.serve({ hostname: "127.0.0.2", port: 0, onListen: () => {} }, handler);
  const upstreamCa = await EgressCa.create("test origin");
  const leaf = await upstreamCa.leaf("big.secret.test");
  const tls = Deno.serve(
    { hostname: "127.0.0.2", port: 0, ...leaf, onListen: () => {} },
    handler,
  );
  const sandboxCa = await EgressCa.create("sandbox");
  const proxy = EgressProxy.listen({ hostname: "127.0.0.1", port: 0 }, {
    identity: "tester",
    rules: NetworkRules.compile({
      allow: ["127.0.0.2", "big.secret.test"],
      hosts: { "big.secret.test": "127.0.0.2" },
      secrets: [{
        host: "big.secret.test",
        env: "T",
        value: "v",
        placeholder: "placeholder-0123456789",
      }],
      ca: [upstreamCa.certPem],
    }),
    ca: sandboxCa,
  });
  const dir = await Deno.makeTempDir({ prefix: "sandbar-egress-big-" });
  try {
    await Deno.writeFile(`${dir}/body`, body);
    await Deno.writeTextFile(`${dir}/ca.pem`, sandboxCa.certPem);
    const http = `http://127.0.0.2:${plain.addr.port}/`;
    const https = `https://big.secret.test:${tls.addr.port}/`;
    const via = {
      "plain HTTP": ["-x", `http://127.0.0.1:${proxy.port}`, http],
      "CONNECT": ["-p", "-x", `http://127.0.0.1:${proxy.port}`, http],
      "SOCKS": ["--socks5-hostname", `127.0.0.1:${proxy.port}`, http],
      "intercepted TLS": [
        "-x",
        `http://127.0.0.1:${proxy.port}`,
        "--cacert",
        `${dir}/ca.pem`,
        https,
      ],
    };
    for (const [path, args] of Object.entries(via)) {
      const got = await new Deno.Command("curl", {
        args: ["-sS", "--max-time", "30", ...args],
        stdout: "piped",
        env: { NO_PROXY: "", no_proxy: "" },
      }).output();
      assert.equal(got.stdout.length, body.length, `${path}: downloaded size`);
      assert.equal(await hex(got.stdout), want, `${path}: downloaded bytes`);
      const up = await curl("--data-binary", `@${dir}/body`, ...args);
      assert.equal(up.stdout, want, `${path}: uploaded bytes (${up.stderr})`);
    }
  } finally {
    await proxy.close();
    await plain.shutdown();
    await tls.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
