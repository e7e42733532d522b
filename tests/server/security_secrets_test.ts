/**
 * No process the server starts obtains a token or a secret: not from `/proc` of the server, its
 * launcher or this test (every ancestor), not from a descriptor inherited from whoever started
 * the server, not from the audit log, the policy file or the state directory. Each route is
 * tried from a shell and judged by whether the secret appears in what the shell printed; a
 * descriptor route also by the count of descriptors.
 */

import assert from "node:assert/strict";
import { serverPid } from "../helpers/proc.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

async function shell(server: TestServer, cmd: string, token?: string) {
  const res = await server.fetch("/process/shell", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ cmd }),
    token,
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return `${body.stdout}\n${body.stderr}`;
}

const AGENT_TOKEN = "agent-token-0123456789abcdef-secret";

Deno.test("no token through /proc of the server or any ancestor", async () => {
  await using server = await startTestServer({
    policy: {
      identities: [{ id: "agent", token: AGENT_TOKEN, scopes: ["process:run", "files:read"] }],
    },
  });
  const pids = [serverPid(server), server.pid, Deno.pid, 1];
  const routes = (pid: number | string) =>
    [
      `tr '\\0' '\\n' </proc/${pid}/environ`,
      `cat /proc/${pid}/task/*/environ`,
      `cat /proc/${pid}/cmdline /proc/${pid}/maps`,
      `for f in /proc/${pid}/fd/*; do cat "$f"; done`,
      `dd if=/proc/${pid}/mem bs=1 count=1 skip=4096`,
    ].join("; ");
  for (const token of [undefined, AGENT_TOKEN]) {
    const out = await shell(
      server,
      [routes("$PPID"), ...pids.map(routes), `tr '\\0' '\\n' </proc/self/environ`].join("; "),
      token,
    );
    assert.ok(!out.includes(server.token), "the default token leaked");
    assert.ok(!out.includes(AGENT_TOKEN), "the agent's token leaked");
    assert.match(out, /Permission denied/);
  }
});

Deno.test("children get descriptors 0, 1 and 2 only, whatever the server inherited", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sandbar-inherited-" });
  const secret = "inherited-descriptor-secret";
  await Deno.writeTextFile(`${dir}/secret`, secret);
  // Opened without O_CLOEXEC, as a launching shell's `exec 7<secret` would be: every process this
  // test starts (the server's launcher) inherits it.
  const libc = Deno.dlopen("libc.so.6", {
    open: { parameters: ["buffer", "i32"], result: "i32" },
    close: { parameters: ["i32"], result: "i32" },
  });
  const fd = libc.symbols.open(new TextEncoder().encode(`${dir}/secret\0`), 0);
  assert.ok(fd > 2);
  try {
    const variants: Record<string, string>[] = [{}, { SANDBAR_PROCESS_SPAWN: "command" }];
    for (const env of variants) {
      await using server = await startTestServer({ env });
      const out = await shell(server, `cat /proc/self/fd/${fd}; ls /proc/self/fd | wc -l`);
      assert.ok(!out.includes(secret), JSON.stringify(env));
      // 0, 1, 2 and ls's own listing.
      assert.match(out, /^4$/m, `${JSON.stringify(env)}: ${out}`);
    }
  } finally {
    libc.symbols.close(fd);
    libc.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the audit log, the policy file and the state directory are out of reach", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sandbar-secrets-" });
  try {
    const root = `${dir}/root`;
    await Deno.mkdir(root);
    // The whole directory is allowed, so only the confinement's own cut keeps these out.
    await using server = await startTestServer({
      root,
      policy: {
        paths: { allow: [dir] },
        audit: "all",
        identities: [{ id: "agent", token: AGENT_TOKEN, scopes: ["process:run"] }],
      },
      args: ["--audit-log", `${dir}/audit.jsonl`],
    });
    await shell(server, "echo hello > note.txt");
    const stateDir = Deno.readTextFileSync(`/proc/${serverPid(server)}/environ`)
      .split("\0").find((v) => v.startsWith("SANDBAR_STATE_DIR="))!.split("=")[1];
    await Deno.writeTextFile(`${stateDir}/canary`, "state-canary-secret");
    const out = await shell(
      server,
      `cat ${dir}/audit.jsonl; cat ${stateDir}/canary; ls ${stateDir}; ` +
        `grep -r token /proc/${server.pid}/cmdline 2>&1; cat $(tr '\\0' ' ' </proc/${server.pid}/cmdline)`,
      AGENT_TOKEN,
    );
    assert.ok(Deno.readTextFileSync(`${dir}/audit.jsonl`).length > 0, "the audit log is written");
    assert.ok(!out.includes("process_shell") && !out.includes('"identity"'), out);
    assert.ok(!out.includes("state-canary-secret"), out);
    assert.ok(!out.includes(AGENT_TOKEN), out);
    assert.equal(Deno.readTextFileSync(`${root}/note.txt`), "hello\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the capabilities document says when processes are not confined", async () => {
  for (const off of [false, true]) {
    await using server = await startTestServer({
      env: off ? { SANDBAR_CONFINEMENT: "off" } : {},
    });
    const caps = await (await server.fetch("/capabilities")).json();
    const said = caps.warnings.some((w: string) => w.includes("string guards"));
    assert.equal(said, off, JSON.stringify(caps.warnings));
  }
});

Deno.test("run_code JavaScript reads no file outside the allowed paths", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sandbar-js-outside-" });
  try {
    await Deno.writeTextFile(`${dir}/data.txt`, "outside-text-secret");
    await Deno.writeTextFile(`${dir}/bad.js`, "outside-js-secret is not javascript\n");
    await using server = await startTestServer();
    for (
      const code of [
        `console.log(await import(${
          JSON.stringify(`${dir}/data.txt`)
        }, { with: { type: "text" } }))`,
        `console.log(await import("/etc/shadow", { with: { type: "text" } }))`,
        `await import(${JSON.stringify(`${dir}/bad.js`)})`,
        `await import(${JSON.stringify(`file://${dir}/bad.js`)})`,
      ]
    ) {
      const res = await server.fetch("/code/run", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ language: "javascript", code }),
      });
      const body = await res.json();
      const out = `${body.stdout}${body.stderr}`;
      assert.notEqual(body.exit_code, 0, code);
      assert.ok(!out.includes("secret"), out);
      assert.ok(!/^root:/m.test(out), out);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a process cannot signal the server or its launcher", async () => {
  await using server = await startTestServer();
  const out = await shell(
    server,
    `kill -KILL $PPID ${
      serverPid(server)
    } ${server.pid}; echo rc=$?; sleep 5 & kill $!; wait $!; echo own=$?`,
  );
  assert.match(out, /rc=1/);
  // Its own children it may still signal.
  assert.match(out, /own=143/);
  const health = await server.fetch("/health");
  assert.equal(health.status, 200);
  await health.body?.cancel();
});
