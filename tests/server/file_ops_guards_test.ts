// Every path guard code with its HTTP status, over real HTTP with real files and real links.
// The server runs with --no-narrow, so the Deno permission backstop is out of the way and
// what is tested is the guard itself: the outside directory is readable and writable by the
// server process, and only the guard keeps it out.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { assertError, namesIn, treeOf } from "./fixtures/files/helpers.ts";

const enc = encodeURIComponent;
const json = (body: unknown) => ({ method: "POST", body: JSON.stringify(body) });
const CANARY = `canary-${crypto.randomUUID()}`;
const FLIPPER = fileURLToPath(new URL("./fixtures/files/flipper.ts", import.meta.url));

/** A gzip response body, inflated, as text (tar headers and all). */
async function gunzipText(res: Response): Promise<string> {
  const bytes = new Uint8Array(await res.arrayBuffer().catch(() => new ArrayBuffer(0)));
  // A stream cut short (the directory vanished mid-walk) inflates as far as it got.
  const inflated = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  let text = "";
  const reader = inflated.pipeThrough(new TextDecoderStream("latin1")).getReader();
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
  } catch { /* truncated */ }
  return text;
}

/** base/root is the server's root; base/root/ws the allowed tree; base/outside and base/root/canary.txt lie outside. */
async function layout(): Promise<string> {
  const base = await Deno.makeTempDir({ prefix: "sandbar-test-guards-" });
  const ws = `${base}/root/ws`;
  await Deno.mkdir(`${ws}/sub`, { recursive: true });
  await Deno.mkdir(`${ws}/ro/inner`, { recursive: true });
  await Deno.mkdir(`${ws}/app`, { recursive: true });
  await Deno.mkdir(`${ws}/private`, { recursive: true });
  await Deno.mkdir(`${ws}/deep/a/b/c`, { recursive: true });
  await Deno.mkdir(`${ws}/p/ro2`, { recursive: true });
  await Deno.mkdir(`${base}/outside`);
  await Deno.writeTextFile(`${base}/outside/canary.txt`, CANARY);
  await Deno.writeTextFile(`${base}/root/canary.txt`, CANARY);
  await Deno.writeTextFile(`${ws}/sub/f.txt`, "inside");
  await Deno.writeTextFile(`${ws}/ro/file.txt`, "read only");
  await Deno.writeTextFile(`${ws}/.env`, "SECRET=1");
  await Deno.writeTextFile(`${ws}/app/.env`, "SECRET=2");
  await Deno.writeTextFile(`${ws}/private/key`, "k");
  await Deno.writeTextFile(`${ws}/a.txt`, "a");
  await Deno.symlink("../../outside", `${ws}/esc`);
  await Deno.symlink("../canary.txt", `${ws}/finallink`);
  await Deno.symlink("../../../../../../outside", `${ws}/deep/a/b/c/up`);
  await Deno.symlink("sub", `${ws}/inner`);
  await Deno.symlink(".env", `${ws}/envlink`);
  await Deno.symlink("ro", `${ws}/rolink`);
  await Deno.symlink(`${base}/outside/canary.txt`, `${ws}/abslink`);
  return base;
}

function policy(symlinks: string) {
  return {
    paths: {
      allow: ["ws"],
      deny: ["**/.env", "**/private/**"],
      read_only: ["ws/ro", "ws/p/ro2"],
      symlinks,
    },
  };
}

async function withServer(
  symlinks: string,
  fn: (server: TestServer, base: string) => Promise<void>,
): Promise<void> {
  const base = await layout();
  try {
    await using server = await startTestServer({
      root: `${base}/root`,
      policy: policy(symlinks),
      args: ["--no-narrow"],
    });
    await fn(server, base);
    assert.equal(await Deno.readTextFile(`${base}/outside/canary.txt`), CANARY);
    assert.deepEqual(await namesIn(`${base}/outside`), ["canary.txt"]);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
}

Deno.test("path guard: invalid_path, path_not_allowed, path_denied, read_only", async (t) => {
  await withServer("within", async (server, base) => {
    const ws = `${base}/root/ws`;
    await t.step("invalid_path 400: missing, empty, NUL, over path_max, not a string", async () => {
      for (const q of ["", "?path=", "?path=a%00b", `?path=${"a".repeat(5000)}`]) {
        await assertError(await server.fetch(`/files/stat${q}`), 400, "invalid_path", q);
      }
      for (const path of [5, null, [], {}, ""]) {
        await assertError(
          await server.fetch("/files/mkdir", json({ path })),
          400,
          "invalid_path",
          JSON.stringify(path),
        );
      }
      const body = await assertError(
        await server.fetch("/files/move", json({ source: "ws/a.txt", destination: "b\0" })),
        400,
        "invalid_path",
      );
      assert.equal(body.param, "destination");
    });

    await t.step("path_not_allowed 403: outside paths.allow, absolute or by ..", async () => {
      for (const p of ["/etc/passwd", "canary.txt", "ws/../canary.txt", `${base}/outside`]) {
        await assertError(
          await server.fetch(`/files?path=${enc(p)}`),
          403,
          "path_not_allowed",
          p,
        );
      }
      await assertError(
        await server.fetch(`/files?path=${enc("ws/../../outside/x")}`, {
          method: "POST",
          body: "x",
        }),
        403,
        "path_not_allowed",
      );
    });

    await t.step("path_denied 403: the path or a parent matches paths.deny", async () => {
      for (const p of ["ws/.env", "ws/app/.env", "ws/private/key", "ws/private/sub/x"]) {
        await assertError(await server.fetch(`/files?path=${enc(p)}`), 403, "path_denied", p);
      }
      await assertError(
        await server.fetch("/files?path=ws/sub/.env", { method: "POST", body: "x" }),
        403,
        "path_denied",
      );
      const moved = await assertError(
        await server.fetch("/files/move", json({ source: "ws/a.txt", destination: "ws/.env" })),
        403,
        "path_denied",
      );
      assert.equal(moved.param, "destination");
      // Removing a directory that holds a denied path is refused too.
      await assertError(
        await server.fetch("/files?path=ws/app&recursive=true", { method: "DELETE" }),
        403,
        "path_denied",
      );
      assert.equal(await Deno.readTextFile(`${ws}/app/.env`), "SECRET=2");
    });

    await t.step("denied entries are invisible to list, search and archive", async () => {
      const list = await (await server.fetch("/files/list?path=ws&depth=3")).json();
      const names = list.entries.map((e: { name: string }) => e.name);
      assert.ok(!names.includes(".env") && !names.includes("key"), names.join());
      const found = await (await server.fetch(
        "/files/search",
        json({ path: "ws", content: "SECRET" }),
      )).json();
      assert.deepEqual(found.matches, []);
    });

    await t.step("read_only 403: writes, deletes and moves in paths.read_only", async () => {
      await assertError(
        await server.fetch("/files?path=ws/ro/new.txt", { method: "POST", body: "x" }),
        403,
        "read_only",
      );
      await assertError(
        await server.fetch("/files?path=ws/ro/file.txt", { method: "DELETE" }),
        403,
        "read_only",
      );
      await assertError(
        await server.fetch("/files/mkdir", json({ path: "ws/ro/d" })),
        403,
        "read_only",
      );
      const src = await assertError(
        await server.fetch("/files/move", json({ source: "ws/ro/file.txt", destination: "ws/x" })),
        403,
        "read_only",
      );
      assert.equal(src.param, "source");
      await assertError(
        await server.fetch("/files/move", json({ source: "ws/a.txt", destination: "ws/ro/a" })),
        403,
        "read_only",
      );
      // A directory holding a read-only tree cannot be removed or moved away either.
      await assertError(
        await server.fetch("/files?path=ws/p&recursive=true", { method: "DELETE" }),
        403,
        "read_only",
      );
      await assertError(
        await server.fetch("/files/move", json({ source: "ws/p", destination: "ws/q" })),
        403,
        "read_only",
      );
      // Reading is fine.
      const res = await server.fetch("/files?path=ws/ro/file.txt");
      assert.equal(await res.text(), "read only");
      assert.deepEqual(await namesIn(`${ws}/ro`), ["file.txt", "inner"]);
      assert.ok((await Deno.stat(`${ws}/p/ro2`)).isDirectory);
    });
  });
});

Deno.test("path guard: symlink_denied under paths.symlinks = within", async (t) => {
  await withServer("within", async (server, base) => {
    const ws = `${base}/root/ws`;
    await t.step("a link in a parent component leading outside", async () => {
      for (const p of ["ws/esc/canary.txt", "ws/deep/a/b/c/up/canary.txt"]) {
        const body = await assertError(
          await server.fetch(`/files?path=${enc(p)}`),
          403,
          "symlink_denied",
          p,
        );
        assert.ok(!JSON.stringify(body).includes(CANARY));
      }
      await assertError(await server.fetch("/files/list?path=ws/esc"), 403, "symlink_denied");
      await assertError(
        await server.fetch("/files?path=ws/esc/new.txt", { method: "POST", body: "x" }),
        403,
        "symlink_denied",
      );
      await assertError(
        await server.fetch("/files/mkdir", json({ path: "ws/esc/made" })),
        403,
        "symlink_denied",
      );
      await assertError(
        await server.fetch("/files/archive?path=ws/esc"),
        403,
        "symlink_denied",
      );
      await assertError(
        await server.fetch("/files/search", json({ path: "ws/esc", pattern: "*" })),
        403,
        "symlink_denied",
      );
      await assertError(await server.fetch("/files/watch?path=ws/esc"), 403, "symlink_denied");
    });

    await t.step("a link as the final component leading outside", async () => {
      for (const p of ["ws/finallink", "ws/abslink"]) {
        await assertError(await server.fetch(`/files?path=${p}`), 403, "symlink_denied", p);
        await assertError(
          await server.fetch(`/files/stat?path=${p}`),
          403,
          "symlink_denied",
          p,
        );
        await assertError(
          await server.fetch(`/files?path=${p}`, { method: "POST", body: "pwned" }),
          403,
          "symlink_denied",
          p,
        );
      }
      assert.equal(await Deno.readTextFile(`${base}/root/canary.txt`), CANARY);
    });

    await t.step("a link to a denied file, or into read-only for a write", async () => {
      await assertError(await server.fetch("/files?path=ws/envlink"), 403, "symlink_denied");
      const read = await server.fetch("/files?path=ws/rolink/file.txt");
      assert.equal(await read.text(), "read only");
      await assertError(
        await server.fetch("/files?path=ws/rolink/new.txt", { method: "POST", body: "x" }),
        403,
        "symlink_denied",
      );
      assert.deepEqual(await namesIn(`${ws}/ro`), ["file.txt", "inner"]);
    });

    await t.step("a link that stays inside is followed", async () => {
      const res = await server.fetch("/files?path=ws/inner/f.txt");
      assert.equal(await res.text(), "inside");
      const up = await server.fetch("/files?path=ws/inner/g.txt", { method: "POST", body: "g" });
      assert.equal(up.status, 200);
      await up.body?.cancel();
      assert.equal(await Deno.readTextFile(`${ws}/sub/g.txt`), "g");
      const stat = await (await server.fetch("/files/stat?path=ws/inner")).json();
      assert.equal(stat.symlink, true);
      assert.equal(stat.type, "directory");
      assert.equal(stat.symlink_target, "sub");
    });

    await t.step(
      "listing shows an escaping link as a link, without its target's details",
      async () => {
        const list = await (await server.fetch("/files/list?path=ws")).json();
        const esc = list.entries.find((e: { name: string }) => e.name === "esc");
        assert.equal(esc.symlink, true);
        assert.equal(esc.type, "file");
      },
    );

    await t.step("deleting an escaping link removes the link, never the target", async () => {
      const res = await server.fetch("/files?path=ws/abslink", { method: "DELETE" });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      assert.ok(!(await namesIn(ws)).includes("abslink"));
      assert.equal(await Deno.readTextFile(`${base}/outside/canary.txt`), CANARY);
    });
  });
});

Deno.test("path guard: symlinks = deny refuses any link; allow follows", async (t) => {
  await t.step("deny", async () => {
    await withServer("deny", async (server, base) => {
      for (const p of ["ws/inner/f.txt", "ws/inner", "ws/rolink/file.txt", "ws/esc/canary.txt"]) {
        await assertError(await server.fetch(`/files?path=${p}`), 403, "symlink_denied", p);
      }
      await assertError(
        await server.fetch("/files?path=ws/inner", { method: "DELETE" }),
        403,
        "symlink_denied",
      );
      await assertError(
        await server.fetch("/files?path=ws/inner/new.txt", { method: "POST", body: "x" }),
        403,
        "symlink_denied",
      );
      const ok = await server.fetch("/files?path=ws/sub/f.txt");
      assert.equal(await ok.text(), "inside");
      assert.ok((await namesIn(`${base}/root/ws`)).includes("inner"));
    });
  });
  await t.step("allow", async () => {
    await withServer("allow", async (server) => {
      const inner = await server.fetch("/files?path=ws/inner/f.txt");
      assert.equal(await inner.text(), "inside");
      // `allow` means links go where they point (here, with the Deno backstop off, outside);
      // the lexical checks still hold for the path as asked.
      const outside = await server.fetch("/files?path=ws/esc/canary.txt");
      assert.equal(await outside.text(), CANARY);
      await assertError(await server.fetch("/files?path=ws/.env"), 403, "path_denied");
    });
  });
});

Deno.test("path guard: a link swapped in between check and use never reaches outside", async () => {
  await withServer("within", async (server, base) => {
    const ws = `${base}/root/ws`;
    await Deno.mkdir(`${ws}/flip`);
    await Deno.writeTextFile(`${ws}/flip/f.txt`, "inside");
    await Deno.writeTextFile(`${base}/outside/f.txt`, CANARY);
    const outsideBefore = await treeOf(`${base}/outside`);
    // A second process exchanges ws/flip (a real directory) and ws/flip.link (a link to the
    // outside) atomically, as fast as it can, while requests run: at every instant ws/flip is
    // one or the other.
    await Deno.symlink("../../outside", `${ws}/flip.link`);
    const flipper = new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-ffi", FLIPPER, ws, "flip", "flip.link"],
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const started = flipper.stdout.getReader();
    await started.read(); // "flipping"
    const statuses = new Map<string, number>();
    try {
      for (let round = 0; round < 100; round++) {
        const results = await Promise.all([
          server.fetch("/files?path=ws/flip/f.txt").then(async (r) => [r.status, await r.text()]),
          server.fetch(`/files?path=ws/flip/up-${round}.txt`, { method: "POST", body: "up" })
            .then(async (r) => [r.status, await r.text()]),
          server.fetch("/files/list?path=ws/flip").then(async (r) => [r.status, await r.text()]),
          server.fetch("/files/search", json({ path: "ws/flip", content: "canary" }))
            .then(async (r) => [r.status, await r.text()]),
          server.fetch("/files/mkdir", json({ path: `ws/flip/m-${round}/x` }))
            .then(async (r) => [r.status, await r.text()]),
          server.fetch("/files/archive?path=ws/flip").then(async (r) => [
            r.status,
            r.status === 200 ? await gunzipText(r) : await r.text(),
          ]),
        ]);
        for (const [i, [status, text]] of results.entries()) {
          const what = ["download", "upload", "list", "search", "mkdir", "archive"][i];
          const key = `${status}:${status === 200 ? "ok" : JSON.parse(String(text)).code ?? "404"}`;
          statuses.set(key, (statuses.get(key) ?? 0) + 1);
          assert.ok(!String(text).includes(CANARY), `${what} leaked: ${text}`);
          assert.ok([200, 403].includes(Number(status)), `${what}: ${status} ${text}`);
          if (status === 403) assert.equal(JSON.parse(String(text)).code, "symlink_denied");
        }
      }
    } finally {
      flipper.kill("SIGKILL");
      await flipper.status;
      started.releaseLock();
      await flipper.stdout.cancel();
    }
    assert.deepEqual(await treeOf(`${base}/outside`), outsideBefore);
    assert.equal(await Deno.readTextFile(`${base}/outside/f.txt`), CANARY);
    await Deno.remove(`${base}/outside/f.txt`);
    // The race was real: both sides of the flip were seen.
    assert.ok(statuses.get("200:ok"), JSON.stringify([...statuses]));
    assert.ok(statuses.get("403:symlink_denied"), JSON.stringify([...statuses]));
  });
});
