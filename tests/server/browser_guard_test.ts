/**
 * The browser's URL guard on its own: pattern syntax, address ranges, decisions, the SOCKS5
 * guard proxy over real loopback sockets, and the Deno permissions the browser group adds.
 */

import assert from "node:assert/strict";
import { SocksGuard } from "../../server/browser/socks_guard.ts";
import {
  addressRange,
  parseIp,
  parseUrlPattern,
  UrlGuard,
} from "../../server/guards/urls/index.ts";
import { matchUrl } from "../../server/guards/urls/patterns.ts";
import { permissionFlags } from "../../server/confine/deno_permissions.ts";
import { compilePolicy } from "../../server/policy/compile.ts";
import type { PolicyFile } from "../../server/policy/schema.ts";

Deno.test("url patterns: syntax and matching", () => {
  const m = (pattern: string, url: string) => matchUrl(parseUrlPattern(pattern), new URL(url));
  assert.equal(m("http://127.0.0.1:*", "http://127.0.0.1:8080/a?b"), true);
  assert.equal(m("http://127.0.0.1:*", "https://127.0.0.1:8080/"), false);
  assert.equal(m("http://127.0.0.1", "http://127.0.0.1/"), true);
  assert.equal(m("http://127.0.0.1", "http://127.0.0.1:8080/"), false, "omitted port: default");
  assert.equal(m("https://*.example.com/*", "https://example.com/"), true);
  assert.equal(m("https://*.example.com/*", "https://a.b.example.com/x"), true);
  assert.equal(m("https://*.example.com/*", "https://badexample.com/"), false);
  assert.equal(m("https://*.example.com/*", "https://example.com.evil.net/"), false);
  assert.equal(m("https://api.example.com/v1/*", "https://api.example.com/v1/x/y?z=1"), true);
  assert.equal(m("https://api.example.com/v1/*", "https://api.example.com/v2/x"), false);
  assert.equal(m("https://api.example.com/v1", "https://api.example.com/v1?x"), false);
  assert.equal(m("*://[::1]:8080", "ws://[::1]:8080/socket"), true);
  assert.equal(m("*://*:*", "wss://anything.test:1/"), true);
  assert.equal(m("HTTP://EXAMPLE.com", "http://example.COM/"), true, "case-insensitive host");
  assert.equal(m("http://127.0.0.1:*", "http://0x7f.0.0.1:9/"), true, "normalized address");
  assert.equal(m("https://bücher.de", "https://xn--bcher-kva.de/"), true, "punycode");
  for (
    const bad of ["127.0.0.1:*", "ftp://x", "http://a*b.com", "http://x:port", "http://*.[::1]"]
  ) {
    assert.throws(() => parseUrlPattern(bad), Error, bad);
  }
});

Deno.test("addresses: private, loopback, link-local and the IPv6 forms of IPv4", () => {
  const cases: [string, string | null][] = [
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["::1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["64:ff9b::a9fe:a9fe", "link-local"],
    ["2002:a9fe:a9fe::1", "link-local"],
    ["169.254.169.254", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["fd12:3456::1", "private"],
    ["100.64.0.1", "shared"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["224.0.0.1", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "reserved"],
    ["2001:db8::1", "reserved"],
    ["172.32.0.1", null],
    ["8.8.8.8", null],
    ["2606:4700:4700::1111", null],
    ["::ffff:8.8.8.8", null],
  ];
  for (const [address, range] of cases) assert.equal(addressRange(address), range, address);
  assert.equal(parseIp("example.com"), null);
  assert.equal(parseIp("1.2.3"), null);
  assert.equal(parseIp("1::2::3"), null);
});

Deno.test("url guard: order of rules, private access only by a specific host", () => {
  const guard = new UrlGuard(
    ["http://127.0.0.1:*", "https://*.example.com", "http://*:*"],
    ["https://bad.example.com/*", "http://127.0.0.1:*/admin*"],
    [{ host: "127.0.0.1", port: 9000 }],
  );
  const rule = (url: string, navigation = true) => guard.checkUrl(url, navigation)?.rule ?? "ok";
  assert.equal(rule("http://127.0.0.1:8080/"), "ok");
  assert.equal(rule("http://127.0.0.1:8080/admin/x"), "url_deny:http://127.0.0.1:*/admin*");
  assert.equal(rule("http://127.0.0.1:9000/health"), "self");
  assert.equal(rule("http://localhost:9000/"), "self");
  assert.equal(rule("http://10.0.0.8/"), "private:private", "`*` host never allows private");
  assert.equal(rule("http://localhost:8080/"), "private:loopback");
  assert.equal(rule("https://bad.example.com/"), "url_deny:https://bad.example.com/*");
  assert.equal(rule("https://ok.example.com/"), "ok");
  assert.equal(rule("https://other.net/"), "url_allow");
  assert.equal(rule("ftp://example.com/"), "scheme:ftp");
  assert.equal(guard.checkUrl("ftp://example.com/", true)?.code, "url_invalid");
  assert.equal(rule("ftp://example.com/", false), "scheme:ftp");
  assert.equal(guard.checkUrl("ftp://example.com/", false)?.code, "url_denied");
  assert.equal(rule("data:text/html,hi", false), "ok");
  assert.equal(rule("blob:http://127.0.0.1:8080/x", false), "ok");
  assert.equal(guard.checkUrl("::nonsense", true)?.code, "url_invalid");

  // Connections: judged by the name asked for and every address it resolved to.
  const conn = (host: string, port: number, addresses: string[]) =>
    guard.checkConnection(host, port, addresses)?.rule ?? "ok";
  assert.equal(conn("127.0.0.1", 8080, ["127.0.0.1"]), "ok");
  assert.equal(conn("127.0.0.1", 9000, ["127.0.0.1"]), "self");
  assert.equal(conn("rebind.test", 80, ["93.184.215.14"]), "ok");
  assert.equal(conn("rebind.test", 80, ["93.184.215.14", "127.0.0.1"]), "private:loopback");
  assert.equal(conn("rebind.test", 80, ["169.254.169.254"]), "private:link-local");
  // `http://*:*` admits any host and port here: the proxy cannot see the scheme.
  assert.equal(conn("other.net", 443, []), "ok");
  const narrow = new UrlGuard(["https://*.example.com"], []);
  assert.equal(narrow.checkConnection("other.net", 443, [])?.rule, "url_allow");
  assert.equal(narrow.checkConnection("a.example.com", 8443, [])?.rule, "url_allow");
  assert.equal(narrow.checkConnection("a.example.com", 443, ["93.184.215.14"]), null);
  // A deny of the whole host refuses the connection; one with a path (`/admin*`, above) is left
  // to request interception, so 127.0.0.1:8080 connects.
  assert.equal(conn("bad.example.com", 443, []), "url_deny:https://bad.example.com/*");
  assert.equal(conn("::1", 8080, ["::1"]), "private:loopback");

  // A server on every interface is reached on the machine's private addresses too.
  const everywhere = new UrlGuard(["http://10.0.0.5:*"], [], [{ host: "0.0.0.0", port: 9000 }]);
  assert.equal(everywhere.checkUrl("http://10.0.0.5:9000/health", true)?.rule, "self");
  assert.equal(everywhere.checkUrl("http://10.0.0.5:9001/", true), null);
});

/** Speak SOCKS5 CONNECT to `proxyPort` for `host:port`; returns the reply code and the conn. */
async function socksConnect(proxyPort: number, host: string, port: number) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: proxyPort });
  const read = async (n: number) => {
    const out = new Uint8Array(n);
    let got = 0;
    while (got < n) {
      const k = await conn.read(out.subarray(got));
      if (k === null) throw new Error("closed");
      got += k;
    }
    return out;
  };
  await conn.write(new Uint8Array([5, 1, 0]));
  assert.deepEqual([...await read(2)], [5, 0]);
  const name = new TextEncoder().encode(host);
  await conn.write(new Uint8Array([5, 1, 0, 3, name.length, ...name, port >> 8, port & 255]));
  const reply = await read(10);
  return { code: reply[1], conn, read };
}

Deno.test("socks guard: allowed connections flow, refused ones never connect", async () => {
  let accepted = 0;
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const echo = (async () => {
    for await (const c of listener) {
      accepted++;
      (async () => {
        const buf = new Uint8Array(64);
        const n = await c.read(buf);
        if (n) await c.write(buf.subarray(0, n));
        c.close();
      })();
    }
  })();
  const port = listener.addr.port;
  const refused: string[] = [];
  const guard = new UrlGuard([`http://127.0.0.1:${port}`, "http://127.0.0.1:1", "http://*:*"], []);
  const unreachable: string[] = [];
  const proxy = SocksGuard.listen(guard, {
    refused: (r) => refused.push(`${r.rule} ${r.url}`),
    unreachable: (_target, why) => unreachable.push(why),
  });
  try {
    const ok = await socksConnect(proxy.port, "127.0.0.1", port);
    assert.equal(ok.code, 0);
    await ok.conn.write(new TextEncoder().encode("ping"));
    assert.equal(new TextDecoder().decode(await ok.read(4)), "ping");
    ok.conn.close();

    // `localhost` is loopback by name and the pattern names 127.0.0.1, not localhost.
    const byName = await socksConnect(proxy.port, "localhost", port);
    assert.equal(byName.code, 2);
    byName.conn.close();
    const otherPort = await socksConnect(
      proxy.port,
      "127.0.0.1",
      port + 1 === 65536 ? 1 : port + 1,
    );
    assert.equal(otherPort.code, 2);
    otherPort.conn.close();
    assert.deepEqual(refused, [
      `private:loopback localhost:${port}`,
      `private:loopback 127.0.0.1:${port + 1 === 65536 ? 1 : port + 1}`,
    ]);
    assert.equal(accepted, 1, "refused connections never reached the listener");

    // Allowed, but nothing listens there: a failure, not a refusal.
    const closed = await socksConnect(proxy.port, "127.0.0.1", 1);
    assert.equal(closed.code, 5);
    closed.conn.close();
    assert.deepEqual(unreachable, ["127.0.0.1:1 refused the connection"]);
    assert.equal(refused.length, 2);
  } finally {
    await proxy.close();
    listener.close();
    await echo;
  }
});

Deno.test("permissions: the browser group adds loopback, or any host when names are allowed", () => {
  const flagsFor = (file: PolicyFile) => {
    const policy = compilePolicy(file, {
      root: "/tmp",
      env: {},
      implemented: new Set(["browser_navigate", "health"]),
      defaultToken: "0123456789abcdef0123",
      configured: true,
    });
    const flags = permissionFlags({ policy, root: "/tmp", host: "127.0.0.1", stateDir: "/tmp/s" });
    return flags.find((f) => f.startsWith("--allow-net"));
  };
  assert.equal(flagsFor({}), "--allow-net=127.0.0.1");
  assert.equal(
    flagsFor({ endpoints: { browser: true }, url_allow: ["http://10.0.0.5:*"] }),
    "--allow-net=127.0.0.1,10.0.0.5",
  );
  assert.equal(flagsFor({ endpoints: { browser: true } }), "--allow-net");
  assert.equal(
    flagsFor({ endpoints: { browser: true }, url_allow: ["https://example.com"] }),
    "--allow-net",
  );
});
