/**
 * The caches a local sandbox's server loads its modules with (`sdk/providers/local/module_cache.ts`):
 * prepared once on the host for the package, with V8's code cache for the server's start path in
 * it. A sandbox whose host has Deno's live cache databases open reads those (the host's
 * `DENO_DIR`, read-only); one whose host has not gets a `DENO_DIR` made of the snapshots and the
 * host's module directories, every mount of it read-only, with no journal of the live databases
 * beside them. Looked at from the host, through the server process's own view of its mounts
 * (`/proc/<pid>/mountinfo` and `/proc/<pid>/root`): a sandbox's commands are confined away from
 * `DENO_DIR` anyway.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { denoDir, denoDirBinds, findBwrap } from "../../sdk/providers/local/launch.ts";
import {
  CACHE_DATABASES,
  CACHE_DIRECTORIES,
  START_MODULES,
} from "../../sdk/providers/local/module_cache.ts";
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

Deno.test("the sandbox's DENO_DIR: the live one while the host has it open, else the snapshots", async () => {
  const cache = await Deno.makeTempDir({ prefix: "deno-dir-" });
  try {
    const prepared = "/prepared";
    // Nothing holds the databases open: the snapshots, in a read-only tmpfs.
    const made = denoDirBinds(cache, prepared);
    assert.deepEqual(made.slice(0, 2), ["--tmpfs", cache]);
    assert.deepEqual(made.slice(-2), ["--remount-ro", cache]);
    // Each database and its journals come from the snapshots, none from the live directory.
    for (const name of CACHE_DATABASES) {
      for (const suffix of ["", "-wal", "-shm"]) {
        const at = made.indexOf(join(cache, name + suffix));
        assert.equal(made[at - 1], join(prepared, name + suffix));
      }
    }
    // Journals left behind by processes gone (no lock on them): still the snapshots.
    for (const name of CACHE_DATABASES) {
      for (const suffix of ["", "-wal", "-shm"]) {
        await Deno.writeFile(join(cache, name + suffix), new Uint8Array());
      }
    }
    assert.equal(denoDirBinds(cache, prepared)[0], "--tmpfs");
    // A process has them open (SQLite, here this test's own connections): the live ones.
    const open = CACHE_DATABASES.map((name) => {
      const db = new DatabaseSync(join(cache, name));
      db.exec("PRAGMA journal_mode = WAL; CREATE TABLE IF NOT EXISTS t (x)");
      return db;
    });
    try {
      assert.deepEqual(denoDirBinds(cache, prepared), ["--ro-bind", cache, cache]);
    } finally {
      for (const db of open) db.close();
    }
    // No snapshots: the live ones whatever the state.
    assert.deepEqual(denoDirBinds(cache, undefined), ["--ro-bind", cache, cache]);
  } finally {
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test({
  name: "a sandbox whose host has no cache open reads the prepared snapshots, all read-only",
  ignore: !findBwrap(), // needs bubblewrap (the sandbox whose mounts are looked at)
  fn: async () => {
    // A DENO_DIR of the host's packages that no process holds open, as fresh as a user's (its
    // emits are made by the warm-up): the child creating the sandbox runs on the host's own
    // cache and names this one only for the sandbox.
    const cache = await Deno.makeTempDir({ prefix: "deno-dir-" });
    try {
      for (const dir of CACHE_DIRECTORIES.filter((d) => d !== "gen")) {
        const from = join(denoDir(), dir);
        if (!(await Deno.stat(from).catch(() => null))?.isDirectory) continue;
        const cp = await new Deno.Command("cp", { args: ["-a", from, join(cache, dir)] }).output();
        assert.ok(cp.success, `copy ${from}`);
      }
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
console.log(JSON.stringify({ exitCode: ran.exitCode, mounts, names, sizes }));
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

      // Inside: the module directories and the snapshots, nothing else (no live journal).
      const expected = [
        ...CACHE_DIRECTORIES.filter((d) => {
          try {
            return Deno.statSync(join(cache, d)).isDirectory;
          } catch {
            return false;
          }
        }),
        ...CACHE_DATABASES.flatMap((n) => [n, `${n}-shm`, `${n}-wal`]),
      ].sort();
      assert.deepEqual(out.names, expected);
      for (const name of CACHE_DATABASES) {
        assert.equal(out.sizes[name], (await Deno.stat(join(prepared, name))).size, name);
        assert.ok(out.sizes[name] > 0, name);
        assert.equal(out.sizes[`${name}-wal`], 0, `${name}-wal is empty`);
      }
    } finally {
      await Deno.remove(cache, { recursive: true });
    }
  },
});
