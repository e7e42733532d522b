/**
 * A local sandbox's sizes for a user who is not root, on cgroup v2, in a subtree delegated to
 * that user the way systemd's `Delegate=yes` hands one to a user's service (the directory and its
 * `cgroup.procs`, `cgroup.subtree_control` and `cgroup.threads` owned by the user). The provider
 * runs as that user and makes the sandbox's cgroup below the parent of its own, where it may
 * write: nothing of root's.
 *
 * Needs root (to make the user's subtree) on a pure cgroup v2 host whose root cgroup hands down
 * `cpu`, `memory` and `pids`, with `unshare` and `setpriv`: this project's CI host is cgroup v1,
 * so `tests/vm/cgroup_v2_sizes.vm.ts` runs this file in a VM that is (`tests/vm/`).
 *
 * The user's process gets Deno and its module cache through bind mounts in a mount namespace of
 * its own, since root's home, where both may be, is closed to other users; nothing on the host's
 * mount table changes.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { onPath } from "../../sdk/providers/local/on_path.ts";

const ROOT_CGROUP = "/sys/fs/cgroup";
const MiB = 1024 * 1024;
/** A user id no account has: the provider needs none. */
const UID = 4242;

function delegatedV2Host(): string | null {
  if (Deno.uid() !== 0) return "needs root, to delegate a subtree to a user";
  try {
    const handed = Deno.readTextFileSync(`${ROOT_CGROUP}/cgroup.subtree_control`).split(/\s+/);
    if (!["cpu", "memory", "pids"].every((c) => handed.includes(c))) {
      return "needs a pure cgroup v2 host handing down cpu, memory and pids";
    }
  } catch {
    return "needs a pure cgroup v2 host (tests/vm/cgroup_v2_sizes.vm.ts runs it in one)";
  }
  for (const tool of ["unshare", "setpriv", "bwrap"]) {
    if (!onPath(tool)) return `needs ${tool}`;
  }
  return null;
}

const why = delegatedV2Host();
const REPO = fileURLToPath(new URL("../..", import.meta.url));

/** Hand `dir` to the user as systemd does: the directory and the files that move processes. */
function delegate(dir: string): void {
  Deno.mkdirSync(dir);
  for (const f of ["", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"]) {
    Deno.chownSync(join(dir, f), UID, UID);
  }
}

async function denoDir(): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), { args: ["info", "--json"] }).output();
  return JSON.parse(new TextDecoder().decode(out.stdout)).denoDir;
}

const file = (path: string) => Deno.readTextFileSync(path).trim();

Deno.test({
  name: "cgroup v2 delegated: a user's sandbox gets its sizes in the user's own subtree",
  ignore: why !== null,
  sanitizeResources: false,
  fn: async () => {
    const tag = crypto.randomUUID().slice(0, 8);
    const subtree = `${ROOT_CGROUP}/sandbar-user-test-${tag}`;
    const home = await Deno.makeTempDir({ prefix: "sbuser-" });
    await Deno.chmod(home, 0o755);
    await Deno.chown(home, UID, UID);
    const cache = join(home, "deno");
    await Deno.mkdir(cache);
    const script = join(home, "child.ts");
    // Deno itself may be installed under root's home too (npx puts it there).
    const deno = join(home, "deno-bin");
    await Deno.writeTextFile(deno, "");
    // The user's program: one sandbox with sizes, what it reports, then kill when told.
    await Deno.writeTextFile(
      script,
      `import { Sandbox } from ${JSON.stringify(join(REPO, "sdk/mod.ts"))};
const s = await Sandbox.create({ cpu: 1, memory: 256, timeout: 1200, requestTimeout: 600 });
const r = await s.commands.run("id -u; cat /proc/self/cgroup", { timeout: 600 });
const m = await s.getMetrics();
console.log(JSON.stringify({ id: s.id, cpu: s.info.cpuCount, memory: s.info.memoryMB,
  memTotal: m.memTotal, out: r.stdout }));
for await (const _ of Deno.stdin.readable) { /* until the test closes it */ }
await s.kill();
console.log(JSON.stringify({ killed: true }));
`,
    );
    delegate(subtree);
    delegate(join(subtree, "job"));
    const child = new Deno.Command("unshare", {
      args: [
        "-m",
        "--propagation",
        "private",
        "/bin/sh",
        "-c",
        'mount --bind "$1" "$2" && mount --bind "$5" "$7" && echo $$ > "$3/cgroup.procs" && ' +
        `exec setpriv --reuid=${UID} --regid=${UID} --clear-groups env HOME="$4" DENO_DIR="$2" ` +
        `"$7" run -A --cached-only "$6"`,
        "sh",
        await denoDir(),
        cache,
        join(subtree, "job"),
        home,
        Deno.execPath(),
        script,
        deno,
      ],
      clearEnv: true,
      env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    const stderr = new Response(child.stderr).text();
    let text = "";
    const nextLine = async () => {
      while (!text.includes("\n")) {
        const { value, done } = await lines.read();
        if (done) throw new Error(`the user's program ended: ${text}\n${await stderr}`);
        text += value;
      }
      const [line, ...rest] = text.split("\n");
      text = rest.join("\n");
      return JSON.parse(line);
    };
    try {
      const seen = await nextLine();
      const [uid, cgroupLine] = seen.out.trim().split("\n");
      assert.equal(uid, `${UID}`, "the sandbox's programs run as the user");
      assert.match(cgroupLine, /^0::\//);
      assert.equal(seen.cpu, 1);
      assert.equal(seen.memory, 256);
      assert.equal(seen.memTotal, 256 * MiB, "getMetrics reads the limit from the cgroup");
      // Made by the user, below the parent of the user's own cgroup, with the sizes asked for.
      const made = [...Deno.readDirSync(join(subtree, "sandbar"))].filter((e) => e.isDirectory);
      assert.deepEqual(made.map((e) => e.name), [seen.id]);
      const dir = join(subtree, "sandbar", seen.id);
      assert.equal(Deno.statSync(dir).uid, UID, "the user made it, not root");
      assert.equal(file(`${dir}/cpu.max`), "100000 100000");
      assert.equal(Number(file(`${dir}/memory.max`)), 256 * MiB);
      assert.equal(file(`${dir}/pids.max`), "1024");
      assert.equal(Number(file(`${dir}/work/memory.max`)), 160 * MiB, "the server's reserve");
      const comm = (pid: string) => file(`/proc/${pid}/comm`);
      const server = file(`${dir}/server/cgroup.procs`).split("\n").filter(Boolean);
      assert.ok(server.map(comm).includes("bwrap"), "the sandbox runs in its server leaf");
      await child.stdin.close();
      assert.deepEqual(await nextLine(), { killed: true });
      assert.equal((await child.status).code, 0, await stderr);
      const left = await Deno.stat(dir).then(() => true, () => false);
      assert.ok(!left, "kill leaves no cgroup");
    } finally {
      try {
        child.kill("SIGKILL");
      } catch { /* ended */ }
      await child.status;
      await lines.cancel().catch(() => {});
      // Whatever is left of the user's subtree: killed, then removed deepest first (only an
      // empty cgroup can be). A failure here is printed, not thrown over the test's own.
      try {
        Deno.writeTextFileSync(join(subtree, "cgroup.kill"), "1");
        for (let i = 0; i < 100; i++) {
          if (/^populated 0$/m.test(file(join(subtree, "cgroup.events")))) break;
          await new Promise((r) => setTimeout(r, 100));
        }
        const remove = (dir: string) => {
          for (const e of Deno.readDirSync(dir)) if (e.isDirectory) remove(join(dir, e.name));
          Deno.removeSync(dir);
        };
        remove(subtree);
      } catch (e) {
        console.error(`could not remove ${subtree}: ${e}`);
      }
      await Deno.remove(home, { recursive: true });
    }
  },
});
