/**
 * The package as users get it: served over HTTP on loopback the way the registry serves it
 * (`registry.ts`), imported by a separate project through its import map, on a machine whose
 * Deno cache has never seen sandbar. A sandbox starts, runs a command and is killed; both CLIs
 * run from the package's URLs; the server CLI's `--help`, its `--root` check and
 * `examples/policy.jsonc` work from there too.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { type ServedPackage, servePackage, type UserProject, userProject } from "./registry.ts";

const hasBwrap = new Deno.Command("sh", { args: ["-c", "command -v bwrap"] }).outputSync().success;

let pkg: ServedPackage;
let project: UserProject;

Deno.test.beforeAll(async () => {
  pkg = servePackage();
  project = await userProject(pkg, await Deno.makeTempDir({ prefix: "sandbar-deno-dir-" }));
});

Deno.test.afterAll(async () => {
  await project.remove();
  await Deno.remove(project.denoDir, { recursive: true }).catch(() => {});
  await pkg.close();
});

Deno.test({
  name: "Sandbox.create from the package's URL: a command runs, kill leaves nothing",
  ignore: !hasBwrap,
  async fn() {
    await Deno.writeTextFile(
      join(project.dir, "main.ts"),
      `import { Sandbox } from "@sandbar/sandbar";
const sandbox = await Sandbox.create({ timeout: 120 });
const r = await sandbox.commands.run("echo hello from $(hostname)");
// The sandbox's commands cannot read /proc (they are confined): the server is found from here.
const serverCmdline = [...Deno.readDirSync("/proc")].filter((e) => /^\\d+$/.test(e.name))
  .map((e) => { try { return Deno.readTextFileSync(\`/proc/\${e.name}/cmdline\`).replaceAll("\\0", " "); } catch { return ""; } })
  .find((c) => c.includes("server/main.ts") && c.includes("--cached-only")) ?? "";
await sandbox.files.write("/home/user/note.txt", "written inside");
const note = await sandbox.files.read("/home/user/note.txt");
await sandbox.kill();
console.log(JSON.stringify({ id: sandbox.id, exitCode: r.exitCode, stdout: r.stdout, note, serverCmdline }));
`,
    );
    const run = await project.run(["main.ts"]);
    assert.equal(run.code, 0, run.stderr);
    const out = JSON.parse(run.stdout);
    assert.equal(out.exitCode, 0);
    assert.equal(out.stdout.trim(), "hello from sandbox");
    const serverCmdline: string = out.serverCmdline;
    // The server inside runs the package's module by URL, from the read-only cache, offline.
    assert.ok(serverCmdline.includes(`${pkg.base}server/main.ts`), serverCmdline);
    assert.ok(serverCmdline.includes("--cached-only"), serverCmdline);
    assert.ok(!serverCmdline.includes("file://"), serverCmdline);
    assert.equal(out.note, "written inside");
    // What the project's Deno fetched is what a registry serves: modules of the package only.
    assert.ok(pkg.requested.some((p) => p.endsWith("/sdk/providers/local/relay.ts")));
    assert.ok(!pkg.requested.some((p) => p.includes("/tests/")));
    // Killed: no directory of it is left in the project's sandbox home.
    const left = [...Deno.readDirSync(join(project.sandbarHome, "sandboxes"))].map((e) => e.name);
    assert.deepEqual(left, []);
    // The caches the sandbox read were prepared for the package by URL: V8's code cache holds
    // the server's entry point under the name the sandbox runs it by.
    const caches = join(project.sandbarHome, "module-cache");
    const [prepared] = [...Deno.readDirSync(caches)].filter((e) => !e.name.startsWith("."));
    const db = new DatabaseSync(join(caches, prepared.name, "v8_code_cache_v2"), {
      readOnly: true,
    });
    const row = db.prepare("SELECT count(*) AS n FROM codecache WHERE specifier = ?")
      .get(`${pkg.base}server/main.ts`);
    db.close();
    assert.equal(row?.n, 1);
  },
});

Deno.test("server CLI from the package's URL: --help, a missing --root, and a real start", async () => {
  const cli = `${pkg.base}server/main.ts`;
  const help = await project.run([cli, "--help"]);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^usage: deno run -A jsr:@sandbar\/sandbar\/server\/cli/);
  assert.match(
    help.stdout,
    /--root DIR +the server's root directory \(default: the current directory\); it must\s+exist/,
  );

  const missing = join(project.dir, "no-such-dir");
  const bad = await project.run([cli, "--root", missing, "--port", "0", "--pty-port", "0"]);
  assert.equal(bad.code, 2);
  assert.equal(
    bad.stderr.trim(),
    `sandbar: --root ${missing} does not exist; create it ` +
      `(mkdir -p ${missing}) or name another`,
  );

  const unknown = await project.run([cli, "--helpp"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown option --helpp; did you mean --help\?/);

  // A real start, by the export's name in the project's import map, with the example policy.
  const root = await Deno.makeTempDir({ dir: project.dir });
  const policy = join(project.dir, "policy.jsonc");
  await Deno.copyFile(new URL("../../examples/policy.jsonc", import.meta.url), policy);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "@sandbar/sandbar/server/cli",
      "--policy",
      policy,
      "--root",
      root,
      "--port",
      "0",
      "--pty-port",
      "0",
    ],
    cwd: project.dir,
    env: {
      DENO_DIR: project.denoDir,
      SVC_SERVER_TOKEN: "t".repeat(40),
      AGENT_TOKEN: "a".repeat(40),
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  try {
    const line = await firstLine(child.stdout);
    const { url } = JSON.parse(line);
    const auth = { authorization: `Bearer ${"t".repeat(40)}` };
    const up = await fetch(`${url}/files?path=hello.txt`, {
      method: "POST",
      headers: auth,
      body: "hi",
    });
    assert.equal(up.status, 200, await up.text());
    const agent = { authorization: `Bearer ${"a".repeat(40)}`, "content-type": "application/json" };
    const shell = await fetch(`${url}/process/shell`, {
      method: "POST",
      headers: agent,
      body: JSON.stringify({ cmd: "cat hello.txt" }),
    });
    assert.deepEqual((await shell.json()).stdout, "hi");
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await child.stderr.cancel();
  }
});

Deno.test("engine CLI from the package's URL: --help, and describe of the example engine", async () => {
  const cli = `${pkg.base}engine/main.ts`;
  const help = await project.run([cli, "--help"]);
  assert.match(help.stdout + help.stderr, /usage: deno run -A .*engine.* <verb> --manifest FILE/);

  const manifest = join(project.dir, "engines.jsonc");
  await Deno.writeTextFile(
    manifest,
    JSON.stringify({
      engines: {
        explorer: {
          command: [
            "deno",
            "run",
            "--quiet",
            "--no-prompt",
            `--allow-import=${new URL(pkg.base).host}`,
            `${pkg.base}engine/examples/explorer.ts`,
          ],
          protocol: 1,
          answers: ["outcomes", "holds", "satisfiable"],
          subjects: ["action"],
          bounds: ["depth", "steps", "runs"],
          witness: "schedule",
          model: ["graphs:1"],
          authority: "proved",
          concurrent: false,
        },
      },
    }),
  );
  const run = await project.run([
    "@sandbar/sandbar/engine/cli",
    "describe",
    "--manifest",
    manifest,
    "--engine",
    "explorer",
  ]);
  assert.equal(run.code, 0, run.stderr);
  const described = JSON.parse(run.stdout);
  assert.equal(described.engine, "explorer");
  assert.equal(described.description.protocol, 1);
});

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`no line before the end: ${text}`);
    text += value;
  }
  reader.releaseLock();
  return text.slice(0, text.indexOf("\n"));
}
