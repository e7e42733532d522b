// The file_ops group over real HTTP with real files: every endpoint, its answers and its errors.
import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";
import { assertError, namesIn, randomBytes, run } from "./fixtures/files/helpers.ts";

const enc = (p: string) => encodeURIComponent(p);
const json = (body: unknown) => ({ method: "POST", body: JSON.stringify(body) });

Deno.test("file_ops: upload, stat, list, download", async (t) => {
  await using server = await startTestServer();
  const root = server.root;

  await t.step("raw upload creates parents and answers FileInfo", async () => {
    const res = await server.fetch(`/files?path=${enc("a/b/c.txt")}`, {
      method: "POST",
      body: "hello world",
    });
    assert.equal(res.status, 200);
    const { files } = await res.json();
    assert.equal(files.length, 1);
    assert.equal(files[0].path, `${root}/a/b/c.txt`);
    assert.equal(files[0].name, "c.txt");
    assert.equal(files[0].type, "file");
    assert.equal(files[0].size, 11);
    assert.equal(await Deno.readTextFile(`${root}/a/b/c.txt`), "hello world");
  });

  await t.step("binary round trip through upload and download", async () => {
    const data = randomBytes(300_000);
    const up = await server.fetch("/files?path=bin.dat", { method: "POST", body: data });
    assert.equal(up.status, 200);
    await up.body?.cancel();
    const down = await server.fetch("/files?path=bin.dat");
    assert.equal(down.status, 200);
    assert.equal(down.headers.get("content-length"), "300000");
    assert.equal(down.headers.get("accept-ranges"), "bytes");
    assert.deepEqual(new Uint8Array(await down.arrayBuffer()), data);
  });

  await t.step("overwrite=false on an existing file is 409 file_exists, content kept", async () => {
    const res = await server.fetch("/files?path=a/b/c.txt&overwrite=false", {
      method: "POST",
      body: "other",
    });
    await assertError(res, 409, "file_exists");
    assert.equal(await Deno.readTextFile(`${root}/a/b/c.txt`), "hello world");
    const again = await server.fetch("/files?path=a/b/c.txt", { method: "POST", body: "new" });
    assert.equal(again.status, 200);
    await again.body?.cancel();
    assert.equal(await Deno.readTextFile(`${root}/a/b/c.txt`), "new");
  });

  await t.step("overwrite keeps the old file's permission bits", async () => {
    await Deno.chmod(`${root}/a/b/c.txt`, 0o600);
    const res = await server.fetch("/files?path=a/b/c.txt", { method: "POST", body: "v3" });
    await res.body?.cancel();
    assert.equal((await Deno.stat(`${root}/a/b/c.txt`)).mode! & 0o777, 0o600);
  });

  await t.step("multipart upload into a directory, several files", async () => {
    const form = new FormData();
    form.append("one", new File(["first"], "one.txt"));
    form.append("two", new File([randomBytes(70_000)], "two.bin"));
    const res = await server.fetch("/files?path=up/", { method: "POST", body: form });
    assert.equal(res.status, 200);
    const { files } = await res.json();
    assert.deepEqual(files.map((f: { path: string }) => f.path), [
      `${root}/up/one.txt`,
      `${root}/up/two.bin`,
    ]);
    assert.equal((await Deno.stat(`${root}/up/two.bin`)).size, 70_000);
  });

  await t.step("multipart to a file path takes exactly one file", async () => {
    const form = new FormData();
    form.append("file", new File(["named"], "ignored.txt"));
    const res = await server.fetch("/files?path=up/named.txt", { method: "POST", body: form });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    assert.equal(await Deno.readTextFile(`${root}/up/named.txt`), "named");
    const two = new FormData();
    two.append("a", new File(["1"], "a.txt"));
    two.append("b", new File(["2"], "b.txt"));
    await assertError(
      await server.fetch("/files?path=up/x.txt", { method: "POST", body: two }),
      400,
      "invalid_request",
    );
  });

  await t.step("multipart file names must be plain names", async () => {
    for (const name of ["..", "../evil.txt", "a/b.txt", "a\\b.txt"]) {
      const form = new FormData();
      form.append("file", new File(["x"], name));
      const res = await server.fetch("/files?path=up/", { method: "POST", body: form });
      // FormData may itself replace some characters; what must never happen is a write outside.
      if (res.status === 200) {
        const { files } = await res.json();
        assert.ok(files[0].path.startsWith(`${root}/up/`), files[0].path);
      } else await assertError(res, 400, "invalid_path", name);
    }
  });

  await t.step("malformed multipart is 400 invalid_request", async () => {
    const res = await server.fetch("/files?path=up/", {
      method: "POST",
      headers: { "content-type": "multipart/form-data; boundary=XYZ" },
      body: '--XYZ\r\nContent-Disposition: form-data; name="f"; filename="f.txt"\r\n\r\ncut',
    });
    await assertError(res, 400, "invalid_request");
    assert.ok(!(await namesIn(`${root}/up`)).includes("f.txt"));
  });

  await t.step("legacy /upload (multipart, path defaults to the root) and /download", async () => {
    const form = new FormData();
    form.append("file", new File(["legacy ✓"], "legacy.txt"));
    const res = await server.fetch("/upload", { method: "POST", body: form });
    assert.equal(res.status, 200);
    const { files } = await res.json();
    assert.equal(files[0].path, `${root}/legacy.txt`);
    const down = await server.fetch("/download?path=legacy.txt");
    assert.equal(down.status, 200);
    assert.match(down.headers.get("content-disposition")!, /attachment; filename="legacy.txt"/);
    assert.equal(await down.text(), "legacy ✓");
    const form2 = new FormData();
    form2.append("path", "up/");
    form2.append("file", new File(["via field"], "field.txt"));
    const res2 = await server.fetch("/upload", { method: "POST", body: form2 });
    assert.equal(res2.status, 200);
    await res2.body?.cancel();
    assert.equal(await Deno.readTextFile(`${root}/up/field.txt`), "via field");
  });

  await t.step("Range: 206 with Content-Range, suffix, open end, 416, ignored", async () => {
    await Deno.writeTextFile(`${root}/digits.txt`, "0123456789");
    const get = (range: string) => server.fetch("/files?path=digits.txt", { headers: { range } });
    let res = await get("bytes=2-4");
    assert.equal(res.status, 206);
    assert.equal(res.headers.get("content-range"), "bytes 2-4/10");
    assert.equal(res.headers.get("content-length"), "3");
    assert.equal(await res.text(), "234");
    res = await get("bytes=-3");
    assert.equal(res.status, 206);
    assert.equal(await res.text(), "789");
    res = await get("bytes=7-");
    assert.equal(res.headers.get("content-range"), "bytes 7-9/10");
    assert.equal(await res.text(), "789");
    res = await get("bytes=5-100");
    assert.equal(res.headers.get("content-range"), "bytes 5-9/10");
    assert.equal(await res.text(), "56789");
    res = await get("bytes=10-");
    assert.equal(res.status, 416);
    assert.equal(res.headers.get("content-range"), "bytes */10");
    await res.body?.cancel();
    res = await get("bytes=0-1,4-5");
    assert.equal(res.status, 200);
    assert.equal(await res.text(), "0123456789");
    res = await server.fetch("/download?path=digits.txt", { headers: { range: "bytes=0-0" } });
    assert.equal(res.status, 206);
    assert.equal(await res.text(), "0");
  });

  await t.step("stat: FileInfo, 404 for a missing path, directories", async () => {
    const res = await server.fetch("/files/stat?path=digits.txt");
    assert.equal(res.status, 200);
    const info = await res.json();
    assert.equal(info.size, 10);
    assert.equal(info.type, "file");
    assert.equal(info.symlink, false);
    assert.equal(typeof info.mode, "number");
    assert.ok(!Number.isNaN(Date.parse(info.modified)));
    await assertError(await server.fetch("/files/stat?path=nope.txt"), 404, "not_found");
    const dir = await (await server.fetch("/files/stat?path=a")).json();
    assert.equal(dir.type, "directory");
  });

  await t.step("download of a directory or a missing file", async () => {
    await assertError(await server.fetch("/files?path=a"), 400, "invalid_arguments");
    await assertError(await server.fetch("/files?path=missing"), 404, "not_found");
  });

  await t.step("list: depth 1 and 2, sorted, links described", async () => {
    await Deno.symlink("digits.txt", `${root}/a/link-to-digits`);
    await Deno.symlink(`${root}/a/b/../../digits.txt`, `${root}/a/abs-link`);
    let res = await server.fetch("/files/list?path=a");
    assert.equal(res.status, 200);
    let body = await res.json();
    assert.equal(body.path, `${root}/a`);
    assert.deepEqual(body.entries.map((e: { name: string }) => e.name), [
      "abs-link",
      "b",
      "link-to-digits",
    ]);
    const dangling = body.entries.find((e: { name: string }) => e.name === "link-to-digits");
    assert.equal(dangling.symlink, true);
    assert.equal(dangling.symlink_target, "digits.txt");
    const abs = body.entries.find((e: { name: string }) => e.name === "abs-link");
    assert.equal(abs.type, "file");
    assert.equal(abs.size, 10);
    res = await server.fetch("/files/list?path=a&depth=2");
    body = await res.json();
    assert.ok(body.entries.some((e: { path: string }) => e.path === `${root}/a/b/c.txt`));
    await assertError(
      await server.fetch("/files/list?path=digits.txt"),
      400,
      "invalid_arguments",
    );
    await assertError(
      await server.fetch("/files/list?path=a&depth=99"),
      400,
      "invalid_arguments",
    );
    await assertError(await server.fetch("/files/list?path=zzz"), 404, "not_found");
  });
});

Deno.test("file_ops: mkdir, delete, move", async (t) => {
  await using server = await startTestServer();
  const root = server.root;

  await t.step(
    "mkdir with parents, again, exist_ok false, parents false, over a file",
    async () => {
      let res = await server.fetch("/files/mkdir", json({ path: "x/y/z" }));
      assert.deepEqual(await res.json(), { path: `${root}/x/y/z`, created: true });
      assert.ok((await Deno.stat(`${root}/x/y/z`)).isDirectory);
      res = await server.fetch("/files/mkdir", json({ path: "x/y/z" }));
      assert.deepEqual(await res.json(), { path: `${root}/x/y/z`, created: false });
      await assertError(
        await server.fetch("/files/mkdir", json({ path: "x/y/z", exist_ok: false })),
        409,
        "file_exists",
      );
      await assertError(
        await server.fetch("/files/mkdir", json({ path: "p/q", parents: false })),
        404,
        "not_found",
      );
      await Deno.writeTextFile(`${root}/file.txt`, "f");
      await assertError(
        await server.fetch("/files/mkdir", json({ path: "file.txt" })),
        409,
        "file_exists",
      );
      await assertError(
        await server.fetch("/files/mkdir", json({ path: "ok", parents: "yes" })),
        400,
        "invalid_arguments",
      );
      await assertError(
        await server.fetch("/files/mkdir", { method: "POST", body: "{not json" }),
        400,
        "invalid_request",
      );
    },
  );

  await t.step("delete: a file, a non-empty directory, recursive, missing, the root", async () => {
    let res = await server.fetch("/files?path=file.txt", { method: "DELETE" });
    assert.deepEqual(await res.json(), { path: `${root}/file.txt`, deleted: true });
    assert.deepEqual(await namesIn(root), ["x"]);
    await assertError(
      await server.fetch("/files?path=x", { method: "DELETE" }),
      409,
      "conflict",
    );
    res = await server.fetch("/files?path=x&recursive=true", { method: "DELETE" });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    assert.deepEqual(await namesIn(root), []);
    await assertError(
      await server.fetch("/files?path=x", { method: "DELETE" }),
      404,
      "not_found",
    );
    await assertError(
      await server.fetch(`/files?path=${enc(root)}&recursive=true`, { method: "DELETE" }),
      409,
      "conflict",
    );
    await assertError(
      await server.fetch("/files?path=x&recursive=maybe", { method: "DELETE" }),
      400,
      "invalid_arguments",
    );
  });

  await t.step("delete of a link removes the link, not its target", async () => {
    await Deno.writeTextFile(`${root}/target.txt`, "t");
    await Deno.symlink("target.txt", `${root}/link.txt`);
    const res = await server.fetch("/files?path=link.txt", { method: "DELETE" });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    assert.deepEqual(await namesIn(root), ["target.txt"]);
  });

  await t.step("move: rename, overwrite false, overwrite true, into itself", async () => {
    await Deno.writeTextFile(`${root}/a.txt`, "A");
    await Deno.writeTextFile(`${root}/b.txt`, "B");
    let res = await server.fetch("/files/move", json({ source: "a.txt", destination: "c.txt" }));
    assert.deepEqual(await res.json(), { source: `${root}/a.txt`, destination: `${root}/c.txt` });
    assert.equal(await Deno.readTextFile(`${root}/c.txt`), "A");
    await assertError(
      await server.fetch("/files/move", json({ source: "c.txt", destination: "b.txt" })),
      409,
      "file_exists",
    );
    assert.equal(await Deno.readTextFile(`${root}/b.txt`), "B");
    assert.equal(await Deno.readTextFile(`${root}/c.txt`), "A");
    res = await server.fetch(
      "/files/move",
      json({ source: "c.txt", destination: "b.txt", overwrite: true }),
    );
    assert.equal(res.status, 200);
    await res.body?.cancel();
    assert.deepEqual(await namesIn(root), ["b.txt", "target.txt"]);
    assert.equal(await Deno.readTextFile(`${root}/b.txt`), "A");
    await Deno.mkdir(`${root}/d/e`, { recursive: true });
    await assertError(
      await server.fetch("/files/move", json({ source: "d", destination: "d/e/f" })),
      400,
      "invalid_arguments",
    );
    res = await server.fetch("/files/move", json({ source: "d", destination: "dd" }));
    assert.equal(res.status, 200);
    await res.body?.cancel();
    assert.ok((await Deno.stat(`${root}/dd/e`)).isDirectory);
    await assertError(
      await server.fetch("/files/move", json({ source: "nope", destination: "x" })),
      404,
      "not_found",
    );
    await assertError(
      await server.fetch("/files/move", json({ source: "b.txt", destination: "no/such/x" })),
      404,
      "not_found",
    );
  });
});

Deno.test("file_ops: search by name and content, bounded", async (t) => {
  await using server = await startTestServer();
  const root = server.root;
  await Deno.mkdir(`${root}/src/deep/er`, { recursive: true });
  await Deno.writeTextFile(`${root}/src/a.ts`, "const a = 1;\n// TODO: fix a\n");
  await Deno.writeTextFile(`${root}/src/b.js`, "// todo lower\nlet b;\n");
  await Deno.writeTextFile(`${root}/src/deep/er/c.ts`, "x\ny\nTODO deep\n");
  await Deno.writeFile(`${root}/src/bin.ts`, new Uint8Array([84, 79, 68, 79, 0, 1, 2]));
  for (let i = 0; i < 30; i++) await Deno.writeTextFile(`${root}/src/n${i}.txt`, "TODO\n");
  const search = (body: Record<string, unknown>) => server.fetch("/files/search", json(body));

  await t.step("by name glob", async () => {
    const res = await search({ path: "src", pattern: "*.ts" });
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.deepEqual(body.matches.map((m: { path: string }) => m.path).sort(), [
      `${root}/src/a.ts`,
      `${root}/src/bin.ts`,
      `${root}/src/deep/er/c.ts`,
    ]);
    assert.equal(body.truncated, false);
    const classes = await (await search({ path: "src", pattern: "[ab].[jt]s" })).json();
    assert.equal(classes.matches.length, 2);
    const byPath = await (await search({ path: ".", pattern: "src/deep/**" })).json();
    assert.ok(byPath.matches.some((m: { name: string }) => m.name === "c.ts"));
  });

  await t.step("by content: lines and columns, binary skipped, case", async () => {
    const body = await (await search({ path: "src", pattern: "*.ts", content: "TODO" })).json();
    assert.deepEqual(
      body.matches.map((m: { name: string; line: number; column: number }) =>
        `${m.name}:${m.line}:${m.column}`
      ).sort(),
      ["a.ts:2:4", "c.ts:3:1"],
    );
    const text = body.matches.find((m: { name: string }) => m.name === "a.ts").text;
    assert.equal(text, "// TODO: fix a");
    const ci = await (await search({ path: "src", content: "todo", case_sensitive: false }))
      .json();
    assert.ok(ci.matches.some((m: { name: string }) => m.name === "b.js"));
    const re = await (await search({ path: "src", content: "^let \\w+;$", regex: true })).json();
    assert.deepEqual(re.matches.map((m: { name: string }) => m.name), ["b.js"]);
  });

  await t.step("bounded: max_results truncates", async () => {
    const body = await (await search({ path: "src", content: "TODO", max_results: 5 })).json();
    assert.equal(body.matches.length, 5);
    assert.equal(body.truncated, true);
  });

  await t.step("a regex that backtracks for ever is stopped by timeout_ms", async () => {
    await Deno.writeTextFile(`${root}/src/evil.txt`, `${"a".repeat(40)}!\n`);
    const res = await search({
      path: "src",
      pattern: "evil.txt",
      content: "^(a+)+$",
      regex: true,
      timeout_ms: 300,
    });
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.timed_out, true);
    assert.deepEqual(body.matches, []);
    // The server was never stuck: it answers the next request.
    const health = await server.fetch("/health");
    assert.equal(health.status, 200);
    await health.body?.cancel();
    // A glob cannot backtrack at all.
    const glob = await (await search({ path: "src", pattern: `${"*a".repeat(200)}b` })).json();
    assert.deepEqual(glob.matches, []);
    assert.equal(glob.timed_out, false);
  });

  await t.step("bad requests", async () => {
    await assertError(await search({ path: "src" }), 400, "invalid_arguments");
    await assertError(
      await search({ path: "src", content: "(", regex: true }),
      400,
      "invalid_arguments",
    );
    await assertError(await search({ path: "src/a.ts", pattern: "*" }), 400, "invalid_arguments");
    await assertError(await search({ path: "none", pattern: "*" }), 404, "not_found");
    await assertError(
      await search({ path: "src", pattern: "*", max_results: 0 }),
      400,
      "invalid_arguments",
    );
  });
});

Deno.test("file_ops: archive is a streamed tar.gz that real tar extracts identically", async () => {
  await using server = await startTestServer();
  const root = server.root;
  const long = "l".repeat(120);
  await Deno.mkdir(`${root}/proj/sub/${long}`, { recursive: true });
  await Deno.writeTextFile(`${root}/proj/readme.md`, "# hi\n");
  await Deno.writeFile(`${root}/proj/sub/blob.bin`, randomBytes(200_000));
  await Deno.writeTextFile(`${root}/proj/sub/ünïcode.txt`, "ü\n");
  await Deno.writeTextFile(`${root}/proj/sub/${long}/deep.txt`, "deep\n");
  await Deno.writeTextFile(`${root}/proj/empty.txt`, "");
  await Deno.symlink("../readme.md", `${root}/proj/sub/link.md`);
  const res = await server.fetch("/files/archive?path=proj");
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/gzip");
  assert.match(res.headers.get("content-disposition")!, /filename="proj.tar.gz"/);
  const out = await Deno.makeTempDir({ prefix: "sandbar-test-archive-" });
  try {
    await Deno.writeFile(`${out}/proj.tar.gz`, new Uint8Array(await res.arrayBuffer()));
    await Deno.mkdir(`${out}/x`);
    await run("tar", ["-xzf", `${out}/proj.tar.gz`, "-C", `${out}/x`]);
    await run("diff", ["-r", "--no-dereference", `${root}/proj`, `${out}/x/proj`]);
    assert.equal(await Deno.readLink(`${out}/x/proj/sub/link.md`), "../readme.md");
    const single = await server.fetch("/files/archive?path=proj/readme.md");
    await Deno.writeFile(`${out}/one.tar.gz`, new Uint8Array(await single.arrayBuffer()));
    assert.equal(await run("tar", ["-tzf", `${out}/one.tar.gz`]), "readme.md\n");
  } finally {
    await Deno.remove(out, { recursive: true });
  }
  await assertError(await server.fetch("/files/archive?path=none"), 404, "not_found");
});
