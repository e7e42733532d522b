// The server's command line as a user meets it: --help, --version, a misspelled flag, a policy
// with several mistakes, the token rule, warnings at start, a port in use, and stopping with
// whatever started it.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { listeningLine, startTestServer } from "../helpers/server.ts";

const MAIN = fileURLToPath(new URL("../../server/main.ts", import.meta.url));
const EXAMPLE = fileURLToPath(new URL("../../examples/policy.jsonc", import.meta.url));
const TOKEN = "token-for-cli-tests-0123";

async function cli(args: string[], env: Record<string, string> = { SVC_SERVER_TOKEN: TOKEN }) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, ...args],
    env,
    stdin: "null",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

async function withPolicy<T>(text: string, fn: (file: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "sandbar-cli-test-" });
  try {
    await Deno.writeTextFile(`${dir}/p.jsonc`, text);
    return await fn(`${dir}/p.jsonc`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("--help lists every option, --data-dir and --version among them", async () => {
  const { code, stdout } = await cli(["--help"]);
  assert.equal(code, 0);
  for (const flag of ["--data-dir", "--version", "--policy", "--root", "--no-narrow"]) {
    assert.match(stdout, new RegExp(`^  ${flag}`, "m"), flag);
  }
  assert.match(stdout, /SVC_SERVER_TOKEN .*at least 16 characters/);
});

Deno.test("--version prints the package's version", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
  const { code, stdout } = await cli(["--version"]);
  assert.equal(code, 0);
  assert.equal(stdout, `sandbar ${config.version}\n`);
});

Deno.test("a misspelled flag names the nearest one; a far one lists them all", async () => {
  const near = await cli(["--polcy", "p.jsonc"]);
  assert.equal(near.code, 2);
  assert.match(near.stderr, /unknown option --polcy; did you mean --policy\?/);
  const far = await cli(["--zzzzzz"]);
  assert.match(far.stderr, /unknown option --zzzzzz; the options are --host, .*--data-dir/);
});

Deno.test("a policy file with several mistakes reports them all in one run", async () => {
  const text =
    '{\n  "audit": "sometimes",\n  "paths": { "allw": [] },\n  "endpoints": { "shel": false }\n}';
  const { code, stdout, stderr } = await withPolicy(text, (file) => cli(["--policy", file]));
  assert.equal(code, 2);
  assert.equal(stdout, "");
  assert.match(stderr, /p\.jsonc:2:12: audit: /);
  assert.match(stderr, /p\.jsonc:3:14: unknown key "allw" in paths/);
  assert.match(stderr, /p\.jsonc:4:18: unknown endpoint id or group "shel"/);
});

Deno.test("one token rule: SVC_SERVER_TOKEN and identity tokens need 16 characters, named", async () => {
  const server = await cli(["--port", "0", "--pty-port", "0"], { SVC_SERVER_TOKEN: "short" });
  assert.equal(server.code, 2);
  assert.match(server.stderr, /SVC_SERVER_TOKEN is 5 characters; a token needs at least 16/);
  const identity = await withPolicy(
    '{ "identities": [{ "id": "ci", "token": "0123456789", "scopes": ["*"] }] }',
    (file) => cli(["--port", "0", "--pty-port", "0", "--policy", file]),
  );
  assert.equal(identity.code, 2);
  assert.match(
    identity.stderr,
    /p\.jsonc:1:41: identities\.0\.token: a token needs at least 16 characters/,
  );
});

Deno.test("examples/policy.jsonc's own sample command starts a server", async () => {
  const sample = (await Deno.readTextFile(EXAMPLE)).split("\n").filter((l) => l.startsWith("//"));
  const env = Object.fromEntries(
    [...sample.join(" ").matchAll(/\b([A-Z_]+)=(\S+)/g)].map((m) => [m[1], m[2]]),
  );
  assert.ok(env.SVC_SERVER_TOKEN && env.AGENT_TOKEN, "the sample sets both tokens");
  await using server = await startTestServer({
    policy: await Deno.readTextFile(EXAMPLE),
    token: env.SVC_SERVER_TOKEN,
    env: { AGENT_TOKEN: env.AGENT_TOKEN },
  });
  const who = await server.fetch("/capabilities", { token: env.AGENT_TOKEN });
  assert.equal((await who.json()).identity_id, "agent");
});

Deno.test("the policy's warnings are printed on stderr at start", async () => {
  await using server = await startTestServer({
    policy: { identities: [{ id: "ci", token_env: "UNSET_CI_TOKEN", scopes: ["*"] }] },
  });
  assert.match(
    server.stderr(),
    /^sandbar: warning: identity "ci" has no token \(token_env unset\) and cannot call$/m,
  );
});

Deno.test("a port in use is named, with the process that holds it", async () => {
  using listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const { code, stderr } = await cli(["--port", String(port), "--pty-port", "0"]);
  assert.equal(code, 2);
  assert.match(
    stderr,
    new RegExp(`127\\.0\\.0\\.1:${port} is already in use by pid ${Deno.pid} \\(.*--port`),
  );
});

/** Pids whose command line holds `marker`. */
async function pidsWith(marker: string): Promise<number[]> {
  const pids: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`).catch(() => "");
    if (cmdline.includes(marker)) pids.push(Number(entry.name));
  }
  return pids;
}

Deno.test("killing a parent that does not forward SIGTERM (as npx) ends the server", async () => {
  const root = await Deno.makeTempDir({ prefix: "sandbar-parent-test-" });
  // bash waits on the server and, like npx, dies of SIGTERM without passing it on.
  const parent = new Deno.Command("bash", {
    args: [
      "-c",
      `"$0" run -A "$1" --port 0 --pty-port 0 --root "$2" & wait`,
      Deno.execPath(),
      MAIN,
      root,
    ],
    env: { SVC_SERVER_TOKEN: TOKEN },
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = parent.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes('"listening"')) {
    const { value, done } = await reader.read();
    assert.ok(!done, "the server exited before listening");
    out += value;
  }
  const { url } = JSON.parse(out.split("\n").find((l) => l.includes('"listening"'))!);
  try {
    assert.equal((await fetch(`${url}/health`)).status, 200);
    assert.ok((await pidsWith(root)).length >= 2, "a launcher and its server");
    parent.kill("SIGTERM");
    await parent.status;
    // The launcher and the server notice within their watch interval, then close.
    let left = await pidsWith(root);
    for (let i = 0; i < 100 && left.length > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      left = await pidsWith(root);
    }
    assert.deepEqual(left, [], "no server process outlives its parent");
    await assert.rejects(fetch(`${url}/health`));
  } finally {
    for (const pid of await pidsWith(root)) Deno.kill(pid, "SIGKILL");
    while (!(await reader.read()).done) { /* drain */ }
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("SIGTERM right after the listening line, or while waiting for a claim, leaves nothing", async () => {
  // The server's state directory is made in TMPDIR (no SANDBAR_STATE_DIR): a signal that came
  // before its listeners did used to kill it there, leaving the directory behind.
  for (const extra of [[], ["--await-claim"]]) {
    const tmp = await Deno.makeTempDir({ prefix: "sandbar-test-stop-" });
    const root = await Deno.makeTempDir({ prefix: "sandbar-test-stop-root-" });
    try {
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          MAIN,
          "--no-narrow",
          "--port",
          "0",
          "--pty-port",
          "0",
          "--root",
          root,
          ...extra,
        ],
        env: { SVC_SERVER_TOKEN: TOKEN, TMPDIR: tmp },
        stdin: "piped",
        stdout: "piped",
        stderr: "null",
      }).spawn();
      await listeningLine(child.stdout);
      const made = [...Deno.readDirSync(tmp)].map((e) => e.name);
      assert.equal(made.filter((n) => n.startsWith("sandbar-")).length, 1, `made: ${made}`);
      child.kill("SIGTERM");
      const status = await child.status;
      await child.stdout.cancel().catch(() => {});
      await child.stdin.close().catch(() => {});
      assert.equal(status.code, 0, `${extra}: stopped, not killed`);
      assert.deepEqual([...Deno.readDirSync(tmp)].map((e) => e.name), [], `${extra}: left`);
    } finally {
      await Deno.remove(tmp, { recursive: true });
      await Deno.remove(root, { recursive: true });
    }
  }
});
