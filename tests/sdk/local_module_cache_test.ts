/**
 * The caches a local sandbox's server loads its modules with (`sdk/providers/local/module_cache.ts`):
 * prepared once on the host for the package, with V8's code cache for the server's start path in
 * it, and seen inside as a `DENO_DIR` that is the host's module directories and those snapshots,
 * every mount of it read-only, with no journal of the host's live databases beside them. Looked at
 * from the host, through the server process's own view of its mounts (`/proc/<pid>/mountinfo` and
 * `/proc/<pid>/root`): the commands of a sandbox are confined away from `DENO_DIR` anyway.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { DatabaseSync } from "node:sqlite";
import { Sandbox } from "../../sdk/mod.ts";
import { denoDir, findBwrap } from "../../sdk/providers/local/launch.ts";
import {
  CACHE_DATABASES,
  CACHE_DIRECTORIES,
  START_MODULES,
} from "../../sdk/providers/local/module_cache.ts";
import { dropSandbarHome, sandboxChildren, useSandbarHome } from "./sandbox_helpers.ts";

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

/** Mount points (field 5) and their options (field 6) of a process, from its mountinfo. */
function mounts(pid: number): { point: string; options: string[]; type: string }[] {
  return Deno.readTextFileSync(`/proc/${pid}/mountinfo`).trim().split("\n").map((line) => {
    const [left, right] = line.split(" - ");
    const f = left.split(" ");
    return { point: f[4], options: f[5].split(","), type: right.split(" ")[0] };
  });
}

Deno.test({
  name: "the server's DENO_DIR is the prepared snapshots and the host's modules, all read-only",
  ignore: !findBwrap(), // needs bubblewrap (the sandbox whose mounts are looked at)
  fn: async () => {
    await using sandbox = await Sandbox.create({ timeout: 120 });
    assert.equal((await sandbox.commands.run("true")).exitCode, 0);
    const prepared = preparedDir();

    // The code cache holds the server's start path, under the names the sandbox loads them by.
    const db = new DatabaseSync(join(prepared, "v8_code_cache_v2"), { readOnly: true });
    const cached = new Set(
      db.prepare("SELECT specifier FROM codecache").all().map((r) => String(r.specifier)),
    );
    db.close();
    for (const module of START_MODULES) {
      const url = new URL(module, ROOT).href;
      assert.ok(cached.has(url), `no code cache for ${module}`);
    }
    const npm = `${pathToFileURL(join(denoDir(), "npm")).href}/`;
    assert.ok([...cached].some((s) => s.startsWith(npm)), "no code cache for an npm package");

    const server = sandboxChildren(`${home}/sandboxes/${sandbox.id}`)
      .find((p) => p.cmdline.includes("server/main.ts"));
    assert.ok(server, "the sandbox's server process");
    const cache = denoDir();
    const below = mounts(server.pid).filter((m) =>
      m.point === cache || m.point.startsWith(`${cache}/`)
    );
    const top = below.find((m) => m.point === cache);
    assert.equal(top?.type, "tmpfs", `DENO_DIR is a tmpfs of its own: ${JSON.stringify(below)}`);
    for (const m of below) {
      assert.ok(m.options.includes("ro"), `${m.point} is mounted ${m.options}`);
    }

    // Inside: the host's module directories and the snapshots, nothing else (no live journal).
    const inside = join(`/proc/${server.pid}/root`, cache);
    const names = [...Deno.readDirSync(inside)].map((e) => e.name).sort();
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
    assert.deepEqual(names, expected);
    for (const name of CACHE_DATABASES) {
      const a = await Deno.readFile(join(inside, name));
      const b = await Deno.readFile(join(prepared, name));
      assert.ok(a.length > 0 && a.length === b.length && a.every((x, i) => x === b[i]), name);
      assert.equal((await Deno.stat(join(inside, `${name}-wal`))).size, 0, `${name}-wal is empty`);
    }
  },
});

Deno.test({
  name: "a second sandbox of the package reuses the prepared caches",
  ignore: !findBwrap(), // needs bubblewrap (the sandbox whose mounts are looked at)
  fn: async () => {
    const before = preparedDir();
    const made = (await Deno.stat(join(before, "v8_code_cache_v2"))).mtime?.getTime();
    await using sandbox = await Sandbox.create({ timeout: 120 });
    assert.equal((await sandbox.commands.run("true")).exitCode, 0);
    assert.equal(preparedDir(), before);
    assert.equal((await Deno.stat(join(before, "v8_code_cache_v2"))).mtime?.getTime(), made);
  },
});
