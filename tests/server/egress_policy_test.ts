/**
 * The policy's `network` section on a server run on its own: each identity's processes reach
 * out only through that identity's egress proxy (its rules, audited with its name), a program
 * that ignores the proxy variables reaches nothing over TCP (Landlock ABI 4, where the kernel
 * has it), and without the section the capabilities document says processes use the host's
 * network. "The internet" is a server on 127.0.0.2, named by a rule.
 */

import assert from "node:assert/strict";
import { landlockAbi, NET_ABI } from "../../server/confine/landlock.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

const CI_TOKEN = "ci-token-0123456789abcdef-network";

async function shell(server: TestServer, cmd: string, token?: string) {
  const res = await server.fetch("/process/shell", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ cmd, timeout: 20 }),
    token,
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body as { stdout: string; stderr: string; exit_code: number };
}

function egressLines(server: TestServer) {
  return server.stderr().split("\n").filter((l) => l.includes('"endpoint":"egress"'))
    .map((l) => JSON.parse(l));
}

Deno.test(
  "policy network: each identity's processes go through its own rules, and only through the proxy",
  {
    // Without Landlock ABI 4 the kernel cannot hold TCP; the capabilities warning says so.
    ignore: landlockAbi() < NET_ABI,
  },
  async () => {
    const origin = Deno.serve(
      { hostname: "127.0.0.2", port: 0, onListen: () => {} },
      () => new Response("hello from the internet"),
    );
    const port = origin.addr.port;
    try {
      await using server = await startTestServer({
        policy: {
          audit: "all",
          network: { allow: ["127.0.0.2"] },
          identities: [
            { id: "default", scopes: ["*"] },
            { id: "ci", token: CI_TOKEN, scopes: ["*"], network: false },
          ],
        },
      });
      const env = await shell(server, "env | grep -i _proxy | sort");
      assert.match(env.stdout, /^HTTPS_PROXY=http:\/\/127\.0\.0\.1:\d+$/m);
      assert.match(env.stdout, /^all_proxy=socks5h:\/\/127\.0\.0\.1:\d+$/m);

      const ok = await shell(server, `curl -sS --max-time 5 http://127.0.0.2:${port}/`);
      assert.equal(ok.stdout, "hello from the internet", ok.stderr);
      const py = await shell(
        server,
        `python3 -c "import urllib.request as u; print(u.urlopen('http://127.0.0.2:${port}/').read().decode())"`,
      );
      assert.equal(py.stdout.trim(), "hello from the internet", py.stderr);
      const refused = await shell(server, `curl -sS -i --max-time 5 http://10.1.2.3:${port}/`);
      assert.match(refused.stdout, /^HTTP\/1\.1 403/);
      assert.match(refused.stdout, /X-Sandbar-Egress-Rule: allow/);
      // A program that ignores the proxy variables reaches nothing: the kernel refuses the connect.
      const direct = await shell(
        server,
        `curl -sS --noproxy '*' --max-time 5 http://127.0.0.2:${port}/`,
      );
      assert.notEqual(direct.exit_code, 0);
      assert.equal(direct.stdout, "");
      // The "ci" identity's network is off: its own proxy, its own refusal.
      const ci = await shell(
        server,
        `curl -sS -i --max-time 5 http://127.0.0.2:${port}/`,
        CI_TOKEN,
      );
      assert.match(ci.stdout, /X-Sandbar-Egress-Rule: network:off/);

      const lines = egressLines(server).map((e) =>
        `${e.identity} ${e.decision} ${e.host} ${e.rule}`
      );
      assert.deepEqual(lines, [
        "default allow 127.0.0.2 allow:127.0.0.2",
        "default allow 127.0.0.2 allow:127.0.0.2",
        "default deny 10.1.2.3 allow",
        "ci deny 127.0.0.2 network:off",
      ]);
      const caps = await (await server.fetch("/capabilities")).json();
      assert.ok(caps.warnings.some((w: string) => w.includes("UDP")), caps.warnings.join("; "));
    } finally {
      await origin.shutdown();
    }
  },
);

Deno.test("policy network: without the section, processes use the host's network and the capabilities say so", async () => {
  await using server = await startTestServer({ policy: {} });
  const caps = await (await server.fetch("/capabilities")).json();
  assert.ok(
    caps.warnings.some((w: string) => w.startsWith("no network section")),
    caps.warnings.join("; "),
  );
  const env = await shell(server, "env | grep -ci _proxy || true");
  assert.equal(env.stdout.trim(), "0");
});

Deno.test("policy network: a misspelt key or a bad rule stops the server with the reason", async () => {
  for (
    const [network, said] of [
      [{ alow: ["x.com"] }, /alow/],
      [{ allow: ["x.com:http"] }, /network.allow\[0\].*port "http"/],
    ] as const
  ) {
    await assert.rejects(
      startTestServer({ policy: { network } }),
      (e: Error) => said.test(e.message),
    );
  }
});
