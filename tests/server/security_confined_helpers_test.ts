// The server's own helper programs run confined too: the system group's (kind `system`) on a
// spawner thread of their own, and Chromium (kind `browser`) through its launcher. Judged by
// side effect, on the real spawner thread, the real launcher and the real Chromium binary: a
// file that should not be written is not there, a canary that should not be read is not shown,
// and a closed port is not reached, each beside a control that shows the same thing working
// where the rules allow it.
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  chromiumEnv,
  findChromium,
  REQUIRED_FLAGS,
  tcpOnlyLaunch,
} from "../../server/browser/chromium.ts";
import { LANDLOCK_ENV } from "../../server/browser/exec_tcp_only.ts";
import { CommandRegistry } from "../../server/named_commands/registry.ts";
import { Confinements, confinementUnavailable } from "../../server/confine/confinement.ts";
import { compilePolicy } from "../../server/policy/compile.ts";
import { SERVER_TOOL_PATH } from "../../server/process/environment.ts";
import { runCaptured } from "../../server/process/run.ts";
import { ServerState } from "../../server/state.ts";

const unconfined = confinementUnavailable();
const chromium = findChromium(Deno.env.toObject());

async function serverState(closedPort = 0) {
  const root = await Deno.makeTempDir({ prefix: "sandbar-root-" });
  const stateDir = await Deno.makeTempDir({ prefix: "sb-" });
  const options = {
    root,
    env: {},
    implemented: new Set<string>(),
    defaultToken: "t".repeat(20),
    configured: false,
  };
  const state = new ServerState(compilePolicy({}, options), root, new CommandRegistry(), stateDir);
  if (closedPort) state.addresses = { url: `http://127.0.0.1:${closedPort}`, ptyUrl: "" };
  const confinements = new Confinements(state);
  return {
    root,
    stateDir,
    confinements,
    async [Symbol.asyncDispose]() {
      confinements.close();
      await Deno.remove(root, { recursive: true });
      await Deno.remove(stateDir, { recursive: true });
    },
  };
}

Deno.test({
  name: "system helpers read /proc whole but write nothing and run only their programs",
  ignore: unconfined !== null,
  async fn() {
    await using s = await serverState();
    const spawner = s.confinements.system() ?? undefined;
    assert.ok(spawner);
    const sh = (script: string) =>
      runCaptured({
        argv: ["sh", "-c", script],
        cwd: "/",
        env: { PATH: SERVER_TOOL_PATH },
        timeoutMs: 10000,
        spawner,
      });
    const reads = await sh(
      "grep -c . /proc/self/status /proc/loadavg >/dev/null && df -P / >/dev/null && echo ok",
    );
    assert.equal(reads.stdout, "ok\n", reads.stderr);
    const outside = await Deno.makeTempDir({ prefix: "sandbar-outside-" });
    try {
      for (const dir of [s.root, outside, s.stateDir]) {
        const r = await sh(`echo x > ${dir}/written`);
        assert.notEqual(r.exit.exitCode, 0);
        assert.equal(
          await Deno.stat(join(dir, "written")).then(() => true, () => false),
          false,
          `${dir} was written`,
        );
      }
      const python = await sh(`python3 -I -c "open('${outside}/py', 'w')" 2>/dev/null; echo $?`);
      assert.equal(python.stdout, "1\n");
      // A program outside the list does not start, even one that would write nothing.
      const id = await sh("id -u");
      assert.equal(id.exit.exitCode, 126, id.stdout);
    } finally {
      await Deno.remove(outside, { recursive: true });
    }
  },
});

/** Run Chromium through its launcher under the browser confinement of `dir`. */
async function confinedChromium(
  s: { confinements: Confinements },
  dir: string,
  flags: string[],
): Promise<{ stdout: string; code: number }> {
  const confinement = s.confinements.browser(dir, chromium!);
  assert.ok(confinement);
  const { program, args } = tcpOnlyLaunch(chromium!, [
    ...REQUIRED_FLAGS,
    `--user-data-dir=${join(dir, "profile")}`,
    ...flags,
  ]);
  const env = { ...chromiumEnv(dir), [LANDLOCK_ENV]: JSON.stringify(confinement) };
  await Deno.mkdir(join(dir, "tmp"), { recursive: true });
  const out = await new Deno.Command(program, {
    args,
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "null",
  })
    .output();
  return { stdout: new TextDecoder().decode(out.stdout), code: out.code };
}

Deno.test({
  name: "Chromium reads and writes only its own directory, whatever a URL guard let through",
  ignore: unconfined !== null || chromium === null || Deno.build.os !== "linux",
  async fn() {
    await using s = await serverState();
    const dir = await Deno.makeTempDir({ dir: s.stateDir, prefix: "c-" });
    // A canary in the workspace (paths.allow) and one beside Chromium's own files.
    await Deno.writeTextFile(join(s.root, "canary.html"), "WORKSPACE-CANARY");
    await Deno.writeTextFile(join(dir, "mine.html"), "OWN-FILE");
    const own = await confinedChromium(s, dir, [`--dump-dom`, `file://${dir}/mine.html`]);
    assert.match(own.stdout, /OWN-FILE/);
    const workspace = await confinedChromium(s, dir, [
      `--dump-dom`,
      `file://${s.root}/canary.html`,
    ]);
    assert.doesNotMatch(workspace.stdout, /WORKSPACE-CANARY/);
    const passwd = await confinedChromium(s, dir, ["--dump-dom", "file:///etc/shadow"]);
    assert.doesNotMatch(passwd.stdout, /root:/);
    // Writes: a screenshot lands in its own directory, never in the workspace.
    await confinedChromium(s, dir, [`--screenshot=${dir}/shot.png`, "about:blank"]);
    assert.ok((await Deno.stat(join(dir, "shot.png"))).size > 0);
    await confinedChromium(s, dir, [`--screenshot=${s.root}/shot.png`, "about:blank"]);
    assert.equal(await Deno.stat(join(s.root, "shot.png")).then(() => true, () => false), false);
  },
});

Deno.test({
  name: "Chromium cannot connect to the server's ports; other ports still work",
  ignore: unconfined !== null || chromium === null || Deno.build.os !== "linux",
  async fn() {
    const page = (text: string) => () =>
      new Response(`<p>${text}</p>`, { headers: { "content-type": "text/html" } });
    await using closed = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      page("SERVER-PORT"),
    );
    await using open = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      page("OTHER-PORT"),
    );
    await using s = await serverState(closed.addr.port);
    const dir = await Deno.makeTempDir({ dir: s.stateDir, prefix: "c-" });
    const direct = ["--no-proxy-server", "--dump-dom"];
    const other = await confinedChromium(s, dir, [
      ...direct,
      `http://127.0.0.1:${open.addr.port}/`,
    ]);
    assert.match(other.stdout, /OTHER-PORT/);
    const server = await confinedChromium(s, dir, [
      ...direct,
      `http://127.0.0.1:${closed.addr.port}/`,
    ]);
    assert.doesNotMatch(server.stdout, /SERVER-PORT/);
  },
});
