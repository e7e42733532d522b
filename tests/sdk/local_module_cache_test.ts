/**
 * The caches a local sandbox's server loads its modules with (`sdk/providers/local/module_cache.ts`):
 * prepared once on the host for the package, with V8's code cache for the server's start path in
 * it. A sandbox gets a `DENO_DIR` made of the snapshots and the package's parts of the host's
 * module directories, every mount of it read-only, with no journal of the live databases beside
 * them and nothing of the host's other programs (their emits, downloads and code cache). Looked at from the host, through the server process's own view of its mounts
 * (`/proc/<pid>/mountinfo` and `/proc/<pid>/root`): a sandbox's commands are confined away from
 * `DENO_DIR` anyway.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { denoDir, denoDirBinds, findBwrap } from "../../sdk/providers/local/launch.ts";
import {
  CACHE_DATABASES,
  packageCacheDirs,
  START_MODULES,
} from "../../sdk/providers/local/module_cache.ts";
import { Sandbox } from "../../sdk/mod.ts";
import { dropSandbarHome, runChild, useSandbarHome } from "./sandbox_helpers.ts";

const home = await useSandbarHome();
Deno.test.afterAll(() => dropSandbarHome(home));

const ROOT = new URL("../../", import.meta.url);

/** The one prepared snapshot directory under `home`. */
function preparedDir(): string {
  const caches = join(home, "module-cache");
  const dirs = [...Deno.readDirSync(caches)].filter((e) =>
    e.isDirectory && !e.name.startsWith(".")
  );
  assert.equal(dirs.length, 1, `one package's caches under ${caches}`);
  return join(caches, dirs[0].name);
}

Deno.test("the sandbox's DENO_DIR: the package's parts of the host's cache and the snapshots, never the rest", async () => {
  const cache = await Deno.makeTempDir({ prefix: "deno-dir-" });
  try {
    const pkg = "/opt/pkg";
    const source = { dir: pkg, module: (p: string) => join(pkg, p), runFlags: [] };
    for (
      const dir of [
        "npm/registry.npmjs.org/hono",
        `gen/file${pkg}/server`,
        `gen/file${pkg}/sdk`,
        "gen/file/home/someone/secret-project",
        "remote/https/example.com",
      ]
    ) await Deno.mkdir(join(cache, dir), { recursive: true });
    // A host program run with `deno eval` in the package's directory: emitted beside its dirs.
    await Deno.writeTextFile(join(cache, `gen/file${pkg}/$deno$eval.mts.js`), "const key = 1;");
    // The host's live databases, open (this test's own connections), with their journals.
    const open = CACHE_DATABASES.map((name) => {
      const db = new DatabaseSync(join(cache, name));
      db.exec("PRAGMA journal_mode = WAL; CREATE TABLE IF NOT EXISTS t (x)");
      return db;
    });
    try {
      const prepared = "/prepared";
      const made = denoDirBinds(cache, source, prepared);
      assert.deepEqual(made.slice(0, 2), ["--tmpfs", cache]);
      assert.deepEqual(made.slice(-2), ["--remount-ro", cache]);
      const bound = new Map<string, string>();
      for (let i = 0; i < made.length; i++) {
        if (made[i] === "--ro-bind-try") bound.set(made[i + 2], made[i + 1]);
      }
      const expected = ["npm", `gen/file${pkg}/sdk`, `gen/file${pkg}/server`].map((d) =>
        join(cache, d)
      );
      for (const dir of expected) assert.equal(bound.get(dir), dir);
      // Each database and its journals come from the snapshots, none from the live directory.
      for (const name of CACHE_DATABASES) {
        for (const suffix of ["", "-wal", "-shm"]) {
          assert.equal(bound.get(join(cache, name + suffix)), join(prepared, name + suffix));
        }
      }
      assert.equal(bound.size, expected.length + CACHE_DATABASES.length * 3, [...bound].join("\n"));
      // Without snapshots: the package's parts only, no databases.
      assert.deepEqual(
        denoDirBinds(cache, source, undefined).filter((a) => a.startsWith(cache)).sort(),
        [cache, cache, ...expected.flatMap((d) => [d, d])].sort(),
      );
    } finally {
      for (const db of open) db.close();
    }
    // A package loaded by URL: its host's downloads and emits.
    const byUrl = {
      dir: null,
      module: (p: string) => `http://127.0.0.1:4545/pkg/${p}`,
      runFlags: [],
    };
    assert.deepEqual(packageCacheDirs(byUrl, cache), [
      "npm",
      "remote/http/127.0.0.1_PORT4545",
      "gen/http/127.0.0.1_PORT4545",
    ]);
  } finally {
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test({
  name: "a sandbox reads the prepared snapshots and the package's part of the cache, all read-only",
  ignore: !findBwrap(), // needs bubblewrap (the sandbox whose mounts are looked at)
  fn: async () => {
    // A DENO_DIR of the host's packages that no process holds open, as fresh as a user's (its
    // emits are made by the warm-up): the child creating the sandbox runs on the host's own
    // cache and names this one only for the sandbox.
    const cache = await Deno.makeTempDir({ prefix: "deno-dir-" });
    try {
      for (const dir of ["npm", "remote"]) {
        const from = join(denoDir(), dir);
        if (!(await Deno.stat(from).catch(() => null))?.isDirectory) continue;
        const cp = await new Deno.Command("cp", { args: ["-a", from, join(cache, dir)] }).output();
        assert.ok(cp.success, `copy ${from}`);
      }
      // Another program of the host's user, run with Deno: its emit and a download of its own.
      const other = join(cache, "gen/file/home/someone/project");
      await Deno.mkdir(other, { recursive: true });
      await Deno.writeTextFile(join(other, "secret.ts.js"), 'export const key = "sk-host-only";');
      await Deno.mkdir(join(cache, "remote/https/private.example"), { recursive: true });
      const out = JSON.parse(
        await runChild(`
import { sandboxChildren } from ${
          JSON.stringify(new URL("tests/sdk/sandbox_helpers.ts", ROOT).href)
        };
Deno.env.set("DENO_DIR", ${JSON.stringify(cache)});
await using sandbox = await sdk.Sandbox.create({ timeout: 120 });
const ran = await sandbox.commands.run("true");
const server = sandboxChildren(Deno.env.get("SANDBAR_HOME") + "/sandboxes/" + sandbox.id)
  .find((p) => p.cmdline.includes("server/main.ts"));
const mounts = Deno.readTextFileSync("/proc/" + server.pid + "/mountinfo");
const inside = "/proc/" + server.pid + "/root" + ${JSON.stringify(cache)};
const names = [...Deno.readDirSync(inside)].map((e) => e.name).sort();
const sizes = Object.fromEntries(names.map((n) => [n, Deno.statSync(inside + "/" + n).size]));
const emitted = [...Deno.readDirSync(inside + "/gen/file")].map((e) => e.name);
const otherSeen = Deno.statSync(inside + "/gen/file").isDirectory &&
  [...Deno.readDirSync(inside + "/gen/file")].some((e) => e.name === "home") &&
  (() => { try { Deno.statSync(inside + "/gen/file/home/someone"); return true; } catch { return false; } })();
console.log(JSON.stringify({ exitCode: ran.exitCode, mounts, names, sizes, emitted, otherSeen }));
`),
      );
      assert.equal(out.exitCode, 0);
      const prepared = preparedDir();

      // The code cache holds the server's start path, under the names the sandbox loads them by.
      const db = new DatabaseSync(join(prepared, "v8_code_cache_v2"), { readOnly: true });
      const cached = new Set(
        db.prepare("SELECT specifier FROM codecache").all().map((r) => String(r.specifier)),
      );
      db.close();
      for (const module of START_MODULES) {
        assert.ok(cached.has(new URL(module, ROOT).href), `no code cache for ${module}`);
      }

      // Every mount at or below DENO_DIR is read-only, the top one a tmpfs of its own.
      const below = (out.mounts as string).trim().split("\n").map((line) => {
        const [left, right] = line.split(" - ");
        const f = left.split(" ");
        return { point: f[4], options: f[5].split(","), type: right.split(" ")[0] };
      }).filter((m) => m.point === cache || m.point.startsWith(`${cache}/`));
      assert.equal(below.find((m) => m.point === cache)?.type, "tmpfs", JSON.stringify(below));
      for (const m of below) {
        assert.ok(m.options.includes("ro"), `${m.point} is mounted ${m.options}`);
      }

      // Inside: the package's emits and the npm packages, and the snapshots; nothing else (no
      // live journal, no other program's emits or downloads).
      const expected = [
        "gen",
        "npm",
        ...CACHE_DATABASES.flatMap((n) => [n, `${n}-shm`, `${n}-wal`]),
      ]
        .sort();
      assert.deepEqual(out.names, expected);
      // Under gen/file only the package's path: the other program's directory is not there.
      assert.deepEqual(out.emitted, [new URL(ROOT).pathname.split("/")[1]]);
      assert.equal(out.otherSeen, false, "another program's emits are seen inside");
      for (const name of CACHE_DATABASES) {
        assert.equal(out.sizes[name], (await Deno.stat(join(prepared, name))).size, name);
        assert.ok(out.sizes[name] > 0, name);
        assert.equal(out.sizes[`${name}-wal`], 0, `${name}-wal is empty`);
        // SQLite's index of the empty log (`cache_snapshot.ts`): readers keep their page cache.
        assert.ok(out.sizes[`${name}-shm`] > 0, `${name}-shm is SQLite's index, not empty`);
      }
    } finally {
      await Deno.remove(cache, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "snapshots removed by another process are made again; another package's are kept while used",
  ignore: !findBwrap(), // needs bubblewrap (the sandboxes made from the snapshots)
  fn: async () => {
    const run = async () => {
      await using sandbox = await Sandbox.create({ timeout: 60 });
      assert.equal((await sandbox.commands.run("echo ok")).stdout, "ok\n");
    };
    await run();
    const ours = preparedDir();
    const caches = join(home, "module-cache");
    // Two other packages' snapshots (two checkouts sharing the home): one made a minute ago, one
    // unused for two hours.
    const recent = join(caches, "0".repeat(24));
    const stale = join(caches, "f".repeat(24));
    for (const [dir, ago] of [[recent, 60_000], [stale, 2 * 3600_000]] as const) {
      await Deno.mkdir(dir);
      const then = new Date(Date.now() - ago);
      await Deno.utime(dir, then, then);
    }
    try {
      // Ours removed meanwhile (by another package's program, after an hour unused): this
      // process's next sandbox has them made again, and no sandbox goes without.
      await Deno.remove(ours, { recursive: true });
      await run();
      for (const name of CACHE_DATABASES) {
        for (const suffix of ["", "-wal", "-shm"]) {
          assert.ok((await Deno.stat(join(ours, name + suffix))).isFile, `${name}${suffix} again`);
        }
      }
      const left = [...Deno.readDirSync(caches)].map((e) => join(caches, e.name)).sort();
      assert.deepEqual(left, [recent, ours].sort(), "the one unused for two hours is removed");
    } finally {
      await Deno.remove(recent, { recursive: true }).catch(() => {});
      await Deno.remove(stale, { recursive: true }).catch(() => {});
    }
  },
});
