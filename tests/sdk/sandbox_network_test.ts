/**
 * `Sandbox.create({ network })` under the local provider: from inside the sandbox, curl,
 * Python's urllib, git over HTTP and Deno's fetch reach an allowed host through the egress
 * proxy (host side, in the supervisor, reached through the relay's bridge); denied hosts,
 * hosts not on the list, private addresses, names that resolve to loopback and a CONNECT whose
 * TLS name differs are refused and audited; a program that ignores the proxy variables reaches
 * nothing; a rule changed while a download runs cuts it off. "The internet" is servers this
 * test starts on 127.0.0.2 and 127.0.0.3 on the host; no traffic leaves 127.0.0.0/8.
 */

import assert from "node:assert/strict";
import { startSecretOrigins } from "../helpers/secret_origins.ts";
import { join } from "node:path";
import { ProviderFeatureNotSupportedError, Sandbox, ValidationError } from "../../sdk/mod.ts";
import { findBwrap } from "../../sdk/providers/local/launch.ts";
import { useSandbarHome } from "./sandbox_helpers.ts";
import { endlessResponse } from "../helpers/endless_response.ts";
import { startPackageIndex } from "../helpers/package_index.ts";
import { SSHD, startSshd } from "../helpers/sshd.ts";

await useSandbarHome();
const noBwrap = findBwrap() === null;

/** A web server on `hostname`: `/` says hello, `/slow` streams forever, others are files. */
function origin(hostname: string, files?: string) {
  const server = Deno.serve({ hostname, port: 0, onListen: () => {} }, async (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/") return new Response(`hello from ${hostname}`);
    if (path === "/slow") {
      return endlessResponse();
    }
    if (files && !path.includes("..")) {
      try {
        return new Response(await Deno.readFile(join(files, path)));
      } catch { /* 404 */ }
    }
    return new Response("not found", { status: 404 });
  });
  return { server, port: server.addr.port };
}

async function git(cwd: string, ...args: string[]) {
  const out = await new Deno.Command("git", { args, cwd, stdout: "null", stderr: "piped" })
    .output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
}

/** A bare repository served over git's "dumb" HTTP protocol. */
async function repository(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "sandbar-egress-git-" });
  await Deno.mkdir(join(dir, "work"));
  await git(join(dir, "work"), "init", "-q", "-b", "main");
  await Deno.writeTextFile(join(dir, "work", "README"), "cloned through the proxy\n");
  await git(join(dir, "work"), "add", "README");
  await git(join(dir, "work"), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one");
  await git(dir, "clone", "-q", "--bare", "work", "repo.git");
  await git(join(dir, "repo.git"), "update-server-info");
  return dir;
}

Deno.test("Sandbox.create network option: checked with the nearest name, and off by default", async () => {
  await assert.rejects(
    Sandbox.create({ network: { alow: ["x.com"] } as never }),
    (e: Error) => e instanceof ValidationError && /did you mean 'allow'/.test(e.message),
  );
  await assert.rejects(
    Sandbox.create({ network: { allow: ["x.com:http"] } }),
    (e: Error) => e instanceof ValidationError && /allow\[0\].*port "http"/.test(e.message),
  );
  await assert.rejects(Sandbox.create({ network: "on" as never }), ValidationError);
  await assert.rejects(
    Sandbox.create({ isolation: "none", network: true }),
    ProviderFeatureNotSupportedError,
  );
});

Deno.test({
  name:
    "local sandbox network: allowed hosts are reached by curl, urllib, git and fetch; the rest is refused and audited",
  ignore: noBwrap,
  async fn() {
    const files = await repository();
    const allowed = origin("127.0.0.2", files);
    const other = origin("127.0.0.3");
    const hosts = {
      "api.allowed.test": "127.0.0.2",
      "blocked.allowed.test": "127.0.0.2",
      "rebound.test": "127.0.0.2",
    };
    try {
      await using sandbox = await Sandbox.create({
        network: {
          allow: ["127.0.0.2", "*.allowed.test", "rebound.test:1"],
          deny: ["blocked.allowed.test"],
          hosts,
        },
      });
      const p = allowed.port;
      const run = async (cmd: string) => {
        const r = await sandbox.commands.run(cmd, { timeout: 60 });
        return { ...r, out: r.stdout.trim() };
      };
      assert.equal(
        (await run(`curl -sS --max-time 10 http://127.0.0.2:${p}/`)).out,
        "hello from 127.0.0.2",
      );
      const py = await run(
        `python3 -c "import urllib.request as u; print(u.urlopen('http://api.allowed.test:${p}/').read().decode())"`,
      );
      assert.equal(py.out, "hello from 127.0.0.2", py.stderr);
      const deno = await run(
        `DENO_DIR=/tmp/dd deno eval 'console.log(await (await fetch("http://api.allowed.test:${p}/")).text())'`,
      );
      assert.equal(deno.out, "hello from 127.0.0.2", deno.stderr);
      const clone = await run(
        `git clone -q http://api.allowed.test:${p}/repo.git /tmp/repo && cat /tmp/repo/README`,
      );
      assert.equal(clone.out, "cloned through the proxy", clone.stderr);

      const refusal = async (url: string) =>
        (await run(
          `curl -sS -i --max-time 10 ${url} | tr -d '\\r' | grep -i x-sandbar-egress-rule`,
        ))
          .out;
      assert.equal(
        await refusal(`http://blocked.allowed.test:${p}/`),
        "X-Sandbar-Egress-Rule: deny:blocked.allowed.test",
      );
      assert.equal(
        await refusal(`http://127.0.0.3:${other.port}/`),
        "X-Sandbar-Egress-Rule: allow",
      );
      assert.equal(await refusal(`http://rebound.test:${p}/`), "X-Sandbar-Egress-Rule: allow");
      // A CONNECT to an allowed host whose TLS handshake names another is closed.
      const sni = await run(
        `python3 -c "
import socket, ssl
s = socket.create_connection(('127.0.0.1', 3128))
s.sendall(b'CONNECT api.allowed.test:${p} HTTP/1.1\\r\\n\\r\\n')
assert s.recv(100).startswith(b'HTTP/1.1 200')
try:
    ssl.create_default_context().wrap_socket(s, server_hostname='evil.test')
    print('handshake went through')
except (ssl.SSLError, OSError) as e:
    print('closed')
"`,
      );
      assert.equal(sni.out, "closed", sni.stderr);
      // A program that ignores the proxy variables reaches nothing: no route out.
      const direct = await run(`curl -sS --noproxy '*' --max-time 5 http://127.0.0.2:${p}/`);
      assert.notEqual(direct.exitCode, 0);
      assert.equal(direct.out, "");
      const raw = await run(
        `python3 -c "import socket; socket.create_connection(('127.0.0.2', ${p}), timeout=5)" 2>&1 | tail -1`,
      );
      assert.match(raw.out, /ConnectionRefused|Network is unreachable|Errno/);

      // Open: every public host, but private ranges and loopback names still need naming.
      assert.equal((await sandbox.network.update(true)).closed, 0);
      assert.equal(
        await refusal(`http://127.0.0.2:${p}/`),
        "X-Sandbar-Egress-Rule: private:loopback",
      );
      assert.equal(
        await refusal(`http://169.254.169.254/`),
        "X-Sandbar-Egress-Rule: private:link-local",
      );
      assert.equal(await refusal(`http://10.0.0.1/`), "X-Sandbar-Egress-Rule: private:private");

      const audit = (await sandbox.network.audit({ limit: 1000 })).map((e) =>
        `${e.decision} ${e.host}:${e.port} ${e.rule}`
      );
      const ok = `allow api.allowed.test:${p} allow:*.allowed.test`;
      assert.deepEqual(audit.slice(0, 3), [`allow 127.0.0.2:${p} allow:127.0.0.2`, ok, ok]);
      const gitLines = audit.slice(3, -8);
      assert.ok(gitLines.length > 0 && gitLines.every((l) => l === ok), audit.join("\n"));
      assert.deepEqual(audit.slice(-8), [
        `deny blocked.allowed.test:${p} deny:blocked.allowed.test`,
        `deny 127.0.0.3:${other.port} allow`,
        `deny rebound.test:${p} allow`,
        ok,
        `deny api.allowed.test:${p} sni`,
        `deny 127.0.0.2:${p} private:loopback`,
        `deny 169.254.169.254:80 private:link-local`,
        `deny 10.0.0.1:80 private:private`,
      ]);
    } finally {
      await allowed.server.shutdown();
      await other.server.shutdown();
      await Deno.remove(files, { recursive: true });
    }
  },
});

Deno.test({
  name: "local sandbox network: a rule changed while a download runs cuts it off",
  ignore: noBwrap,
  async fn() {
    const target = origin("127.0.0.2");
    try {
      await using sandbox = await Sandbox.create({ network: { allow: ["127.0.0.2"] } });
      const download = await sandbox.commands.run(
        `curl -sS --max-time 60 -o /tmp/out http://127.0.0.2:${target.port}/slow`,
        { background: true, timeout: 0 },
      );
      let size = 0;
      for (let i = 0; i < 200 && size < 64 * 1024; i++) {
        await new Promise((r) => setTimeout(r, 50));
        size = Number(
          (await sandbox.commands.run("stat -c %s /tmp/out 2>/dev/null || echo 0")).stdout,
        );
      }
      assert.ok(size >= 64 * 1024, `the download ran (${size} bytes)`);
      assert.equal((await sandbox.network.update({ allow: ["127.0.0.3"] })).closed, 1);
      const result = await download.wait();
      assert.notEqual(result.exitCode, 0, "curl saw the connection cut");
      const last = (await sandbox.network.audit()).at(-1)!;
      assert.deepEqual([last.decision, last.code, last.rule], ["deny", "egress_closed", "allow"]);
    } finally {
      await target.server.shutdown();
    }
  },
});

Deno.test({
  name:
    "local sandbox network: a secret never enters the sandbox; its placeholder is swapped at its host only",
  ignore: noBwrap,
  async fn() {
    // Made now, so no file (this test's source is bound into the sandbox under /tmp in CI) has it.
    const secret = `real-secret-${crypto.randomUUID()}`;
    const origins = await startSecretOrigins();
    const { seenTls, seenPlain } = origins;
    try {
      await using sandbox = await Sandbox.create({
        network: {
          allow: ["api.secret.test", "127.0.0.3"],
          hosts: { "api.secret.test": "127.0.0.2" },
          secrets: [{ host: "api.secret.test", env: "API_TOKEN", value: secret }],
          ca: [origins.caPem],
        },
      });
      const run = async (cmd: string) => (await sandbox.commands.run(cmd, { timeout: 60 }));
      const url = `https://api.secret.test:${origins.tlsPort}/`;
      const viaCurl = await run(
        `curl -sS --max-time 10 -H "Authorization: Bearer $API_TOKEN" ${url}`,
      );
      assert.equal(viaCurl.stdout, "ok", viaCurl.stderr);
      const viaPython = await run(
        `python3 -c "import os, urllib.request as u; print(u.urlopen(u.Request('${url}', headers={'Authorization': 'Bearer ' + os.environ['API_TOKEN']})).read().decode())"`,
      );
      assert.equal(viaPython.stdout.trim(), "ok", viaPython.stderr);
      assert.deepEqual(seenTls, [`Bearer ${secret}`, `Bearer ${secret}`]);
      await run(
        `curl -sS --max-time 10 -H "Authorization: Bearer $API_TOKEN" http://127.0.0.3:${origins.plainPort}/`,
      );
      const placeholder = (await run('printf %s "$API_TOKEN"')).stdout;
      assert.match(placeholder, /^sandbar-placeholder-/);
      assert.deepEqual(seenPlain, [`Bearer ${placeholder}`]);
      // Nowhere inside: no process's environment, no file it can read.
      const b64 = btoa(secret);
      const found = await run(
        `grep -rlF -- "$(printf %s ${b64} | base64 -d)" /proc/[0-9]*/environ /home/user /tmp /opt/sandbar/egress-ca /etc 2>/dev/null; echo searched`,
      );
      assert.equal(found.stdout, "searched\n");
      await assert.rejects(
        sandbox.network.update({ allow: ["x.test"], secrets: [] }),
        /fixed when the sandbox is created/,
      );
      // A rule change keeps the secret.
      await sandbox.network.update({
        allow: ["api.secret.test"],
        hosts: { "api.secret.test": "127.0.0.2" },
      });
      assert.equal(
        (await run(`curl -sS -H "Authorization: Bearer $API_TOKEN" ${url}`)).stdout,
        "ok",
      );
      assert.equal(seenTls.at(-1), `Bearer ${secret}`);
    } finally {
      await origins.close();
    }
  },
});

Deno.test({
  name:
    "local sandbox network: pip installs into a virtual environment from a package index through the proxy",
  ignore: noBwrap,
  async fn() {
    const index = await startPackageIndex("127.0.0.2");
    try {
      await using sandbox = await Sandbox.create({ network: { allow: ["127.0.0.2"] } });
      const simple = index.url;
      const r = await sandbox.commands.run(
        `python3 -m venv /tmp/venv && /tmp/venv/bin/pip install -q --disable-pip-version-check ` +
          `--index-url ${simple} sandbar-egress-probe && ` +
          `/tmp/venv/bin/python -c "import sandbar_egress_probe as p; print(p.VALUE)"`,
        { timeout: 120 },
      );
      assert.equal(r.stdout.trim(), "installed through the proxy", r.stderr);
    } finally {
      await index.close();
    }
  },
});

Deno.test({
  name:
    "local sandbox network: git clones over SSH through the proxy's SOCKS5; a host not allowed is refused",
  ignore: noBwrap || SSHD === null,
  async fn() {
    const files = await repository();
    const sshd = await startSshd("127.0.0.2");
    try {
      await using sandbox = await Sandbox.create({
        network: { allow: [`127.0.0.2:${sshd.port}`] },
      });
      await sandbox.files.write("/tmp/ssh/id", sshd.clientKey);
      await sandbox.files.write("/tmp/ssh/known_hosts", sshd.knownHosts);
      const ssh = "ssh -F /dev/null -i /tmp/ssh/id -o UserKnownHostsFile=/tmp/ssh/known_hosts " +
        "-o StrictHostKeyChecking=yes -o BatchMode=yes " +
        `-o ProxyCommand='nc -X 5 -x 127.0.0.1:3128 %h %p'`;
      const clone = await sandbox.commands.run(
        `chmod 600 /tmp/ssh/id && GIT_SSH_COMMAND="${ssh}" git clone -q ` +
          `ssh://root@127.0.0.2:${sshd.port}${files}/repo.git /tmp/repo && cat /tmp/repo/README`,
        { timeout: 60 },
      );
      assert.equal(clone.stdout.trim(), "cloned through the proxy", clone.stderr);
      const denied = await sandbox.commands.run(
        `${ssh} -p ${sshd.port} root@127.0.0.3 true`,
        { timeout: 60 },
      );
      assert.notEqual(denied.exitCode, 0);
      assert.match(denied.stderr, /SOCKSv5 error: Connection not allowed by ruleset/);
      const audit = (await sandbox.network.audit()).map((e) => `${e.decision} ${e.host}:${e.port}`);
      assert.deepEqual(audit, [
        `allow 127.0.0.2:${sshd.port}`,
        `deny 127.0.0.3:${sshd.port}`,
      ]);
    } finally {
      await sshd.close();
      await Deno.remove(files, { recursive: true });
    }
  },
});
