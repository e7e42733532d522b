/**
 * Isolation is never silently off: without `bwrap` on PATH a local sandbox is refused with the
 * documented error (how to install bubblewrap, how to opt out), the demo says so plainly, and
 * `isolation: "none"` works and says so in `info`, in the capabilities' `warnings` and once on
 * stderr. Each case runs in a child process whose PATH has every program of this machine but
 * `bwrap`.
 */

import assert from "node:assert/strict";
import { dropSandbarHome, runChild, sandboxDirs, useSandbarHome } from "./sandbox_helpers.ts";

const home = await useSandbarHome();
Deno.test.afterAll(() => dropSandbarHome(home));

/** A directory of links to every program on this machine's PATH except `bwrap`. */
async function pathWithoutBwrap(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "no-bwrap-" });
  for (const from of (Deno.env.get("PATH") ?? "/usr/bin:/bin").split(":")) {
    try {
      for (const e of Deno.readDirSync(from)) {
        if (e.name === "bwrap") continue;
        await Deno.symlink(`${from}/${e.name}`, `${dir}/${e.name}`).catch(() => {});
      }
    } catch { /* not a directory */ }
  }
  return dir;
}

const noBwrap = await pathWithoutBwrap();
Deno.test.afterAll(() => Deno.remove(noBwrap, { recursive: true }));

Deno.test("no bwrap on PATH: create fails with how to install it and how to opt out", async () => {
  const out = JSON.parse(
    await runChild(
      `try { await sdk.Sandbox.create(); console.log("{}"); }
       catch (e) { console.log(JSON.stringify({ name: e.name, code: e.code, message: e.message,
         suggestion: e.suggestion })); }`,
      { PATH: noBwrap },
    ),
  );
  assert.equal(out.name, "ProviderFeatureNotSupportedError");
  assert.equal(out.code, "E8004");
  assert.match(out.message, /`bwrap` is not on PATH/);
  assert.match(out.message, /apt-get install bubblewrap/);
  assert.match(out.message, /isolation: "none"/);
  assert.deepEqual(sandboxDirs(home), [], "a refused create leaves nothing");
});

Deno.test('isolation: "none" works and says so: info, capabilities warnings, stderr once', async () => {
  const script = `
    const a = await sdk.Sandbox.create({ isolation: "none" });
    const b = await sdk.Sandbox.create({ isolation: "none" });
    const caps = await a.server.discover();
    const r = await a.commands.run("echo hi");
    console.log(JSON.stringify({ isolation: a.info.isolation, listed: (await sdk.Sandbox.list())
      .map((i) => i.isolation), warnings: caps.warnings, stdout: r.stdout }));
    await a.kill();
    await b.kill();`;
  const child = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      "--ext=ts",
      `import * as sdk from "${import.meta.resolve("../../sdk/mod.ts")}";${script}`,
    ],
    env: { SANDBAR_HOME: home, PATH: noBwrap },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(child.stderr);
  assert.ok(child.success, stderr);
  const out = JSON.parse(new TextDecoder().decode(child.stdout));
  assert.equal(out.isolation, "none");
  assert.deepEqual(out.listed, ["none", "none"]);
  assert.equal(out.stdout, "hi\n");
  assert.ok(out.warnings.some((w: string) => /isolation "none"/.test(w)), out.warnings.join("; "));
  assert.equal(stderr.match(/runs with isolation "none"/g)?.length, 1, stderr);
  assert.deepEqual(sandboxDirs(home), []);
});

Deno.test("deno task demo without bwrap says what is missing instead of crashing", async () => {
  const demo = new URL("../../scripts/demo.ts", import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", demo],
    env: { PATH: noBwrap },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 1, stderr);
  assert.match(stderr, /cannot start a sandbox on this machine/);
  assert.match(stderr, /apt-get install bubblewrap/);
  assert.match(stderr, /SANDBAR_ISOLATION=none deno task demo/);
  assert.doesNotMatch(stderr, /error: Uncaught/);
});
