/**
 * client.files against the real server: every method, binary safety, streaming to and from
 * disk, watch, and the file policy errors.
 */

import assert from "node:assert/strict";
import {
  ConflictError,
  FilePolicyDeniedError,
  PayloadTooLargeError,
  PermissionDeniedError,
  PolicyDeniedError,
  ServerClient,
  ServerNotFoundError,
} from "../../sdk/mod.ts";
import { startTestServer } from "../helpers/server.ts";

/** Bytes 0..255 repeated: every byte value, including ones invalid as UTF-8. */
function allBytes(size: number): Uint8Array {
  const b = new Uint8Array(size);
  for (let i = 0; i < size; i++) b[i] = (i * 7 + (i >> 8)) & 0xff;
  return b;
}

async function sha256(data: Uint8Array | ReadableStream<Uint8Array>): Promise<string> {
  const bytes = data instanceof Uint8Array
    ? data
    : new Uint8Array(await new Response(data).arrayBuffer());
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test("files: upload, stat, exists, list, readText, download with a range, move, delete", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  const f = client.files;
  const info = await f.upload("notes/hello.txt", "héllo wörld\n");
  assert.equal(info.path, `${server.root}/notes/hello.txt`);
  assert.equal(info.type, "file");
  assert.equal(info.size, new TextEncoder().encode("héllo wörld\n").length);
  assert.ok(info.modified instanceof Date);
  assert.equal(await f.readText("notes/hello.txt"), "héllo wörld\n");
  assert.equal((await f.stat(`${server.root}/notes`)).type, "directory");
  assert.equal(await f.exists("notes/hello.txt"), true);
  assert.equal(await f.exists("notes/nope.txt"), false);
  const part = await f.download("notes/hello.txt", { range: { start: 0, end: 1 } });
  assert.deepEqual(part, new TextEncoder().encode("h\xc3").slice(0, 2));
  assert.deepEqual((await f.list("notes")).map((e) => e.name), ["hello.txt"]);
  const made = await f.mkdir("notes/a/b");
  assert.deepEqual(made, { path: `${server.root}/notes/a/b`, created: true });
  assert.equal((await f.mkdir("notes/a/b")).created, false);
  assert.deepEqual(
    (await f.list("notes", { depth: 3 })).map((e) => e.path.slice(server.root.length)),
    ["/notes/a", "/notes/a/b", "/notes/hello.txt"],
  );
  const moved = await f.move("notes/hello.txt", "notes/a/hi.txt");
  assert.equal(moved.destination, `${server.root}/notes/a/hi.txt`);
  await f.upload("notes/other.txt", "x");
  await assert.rejects(f.move("notes/other.txt", "notes/a/hi.txt"), ConflictError);
  await assert.rejects(f.upload("notes/a/hi.txt", "new", { overwrite: false }), (e) => {
    assert.ok(e instanceof ConflictError);
    assert.equal(e.serverCode, "file_exists");
    return true;
  });
  await assert.rejects(f.delete("notes"), ConflictError); // not empty, not recursive
  await f.delete("notes", { recursive: true });
  assert.equal(await f.exists("notes"), false);
  await assert.rejects(f.stat("notes"), ServerNotFoundError);
});

Deno.test("files: binary bytes survive upload and download, in memory and as streams", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  const data = allBytes(300_000);
  await client.files.upload("bin/data.bin", data);
  assert.deepEqual(await client.files.download("bin/data.bin"), data);
  assert.deepEqual(await client.files.downloadLegacy("bin/data.bin"), data);
  const stream = await client.files.downloadStream("bin/data.bin", { range: { start: 1000 } });
  assert.equal(await sha256(stream), await sha256(data.slice(1000)));
  const [legacy] = await client.files.uploadLegacy(data.slice(0, 5000), {
    path: "bin/",
    filename: "legacy.bin",
  });
  assert.equal(legacy.path, `${server.root}/bin/legacy.bin`);
  assert.deepEqual(await client.files.download("bin/legacy.bin"), data.slice(0, 5000));
});

Deno.test("files: uploadFile and downloadFile stream 100 MB byte-exact through disk", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  const dir = await Deno.makeTempDir({ prefix: "sandbar-sdk-files-" });
  try {
    const size = 100 * 1024 * 1024;
    const block = allBytes(1024 * 1024);
    const src = `${dir}/src.bin`;
    {
      using file = await Deno.open(src, { write: true, create: true });
      for (let written = 0; written < size; written += block.length) {
        block[0] = written / block.length; // every megabyte differs
        await file.write(block);
      }
    }
    const info = await client.files.uploadFile(src, "big/big.bin");
    assert.equal(info.size, size);
    const dest = `${dir}/dest.bin`;
    const result = await client.files.downloadFile("big/big.bin", dest);
    assert.deepEqual(result, { path: dest, size });
    const [a, b] = await Promise.all([
      sha256((await Deno.open(src)).readable),
      sha256((await Deno.open(dest)).readable),
    ]);
    assert.equal(a, b);
    // Only the finished file is left in the directory: no temp file.
    const names = [];
    for await (const e of Deno.readDir(dir)) names.push(e.name);
    assert.deepEqual(names.sort(), ["dest.bin", "src.bin"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("files: downloadFile of a missing file leaves no local file", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  const dir = await Deno.makeTempDir({ prefix: "sandbar-sdk-files-" });
  try {
    await assert.rejects(
      client.files.downloadFile("nope.bin", `${dir}/x.bin`),
      ServerNotFoundError,
    );
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("files: search by name and content, and archive as tar.gz", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  await client.files.upload("src/a.ts", "const a = 1;\n// TODO: fix\n");
  await client.files.upload("src/b.md", "nothing\n");
  const byName = await client.files.search("src", { pattern: "*.ts" });
  assert.deepEqual(byName.matches.map((m) => m.name), ["a.ts"]);
  assert.equal(byName.matches[0].line, null);
  assert.equal(byName.truncated, false);
  const byContent = await client.files.search("src", { content: "TODO" });
  assert.equal(byContent.matches.length, 1);
  assert.equal(byContent.matches[0].line, 2);
  assert.equal(byContent.matches[0].text, "// TODO: fix");
  const archive = await client.files.archive("src");
  const tar = new Uint8Array(
    await new Response(
      archive.pipeThrough(
        new DecompressionStream("gzip") as unknown as TransformStream<Uint8Array, Uint8Array>,
      ),
    ).arrayBuffer(),
  );
  const text = new TextDecoder("latin1").decode(tar);
  assert.ok(text.includes("src/a.ts"));
  assert.ok(text.includes("// TODO: fix"));
});

Deno.test("files: watch yields changes after onReady, and watchFor collects them", async () => {
  await using server = await startTestServer();
  await using client = new ServerClient(server.url, { token: server.token });
  await client.files.mkdir("w");
  const one = `${server.root}/w/one.txt`;
  // An upload is a temp file renamed into place: one.txt appears by a rename (or a create).
  const events = await client.files.watchFor("w", {
    until: (e) => e.path === one,
    timeout: 20,
    onReady: () => client.files.upload("w/one.txt", "1"),
  });
  const last = events.at(-1)!;
  assert.equal(last.path, one, JSON.stringify(events));
  assert.ok(["create", "rename", "modify"].includes(last.type), JSON.stringify(events));
  assert.ok(last.time instanceof Date);

  // The generator form: a delete of the file, then stopped by a signal; it ends quietly and
  // closes the connection.
  const stop = new AbortController();
  const seen: string[] = [];
  for await (
    const e of client.files.watch("w", {
      signal: stop.signal,
      onReady: () => client.files.delete("w/one.txt"),
    })
  ) {
    seen.push(`${e.type} ${e.path}`);
    if (e.path === one && e.type === "delete") stop.abort();
  }
  assert.deepEqual(seen, [`delete ${one}`]);
});

Deno.test("files: the path policy raises FilePolicyDeniedError, also a PermissionDeniedError", async () => {
  await using server = await startTestServer({
    policy: { paths: { read_only: ["ref"], deny: ["**/.env"] } },
  });
  await using client = new ServerClient(server.url, { token: server.token });
  await assert.rejects(client.files.list("/etc"), (e) => {
    assert.ok(e instanceof FilePolicyDeniedError);
    assert.ok(e instanceof PolicyDeniedError);
    assert.ok(e instanceof PermissionDeniedError);
    assert.equal(e.status, 403);
    assert.equal(e.serverCode, "path_not_allowed");
    assert.equal(e.endpoint, "files_list");
    assert.equal(e.param, "path");
    return true;
  });
  await assert.rejects(client.files.upload("app/.env", "SECRET=1"), (e) => {
    assert.ok(e instanceof FilePolicyDeniedError);
    assert.equal(e.serverCode, "path_denied");
    return true;
  });
  await assert.rejects(client.files.upload("ref/x.txt", "x"), (e) => {
    assert.ok(e instanceof FilePolicyDeniedError);
    assert.equal(e.serverCode, "read_only");
    return true;
  });
});

Deno.test("files: a body over the limit raises PayloadTooLargeError with the limit", async () => {
  await using server = await startTestServer({
    policy: { endpoints: { files_upload: { limits: { body_bytes: 1024 } } } },
  });
  await using client = new ServerClient(server.url, { token: server.token });
  await assert.rejects(client.files.upload("big.bin", allBytes(4096)), (e) => {
    assert.ok(e instanceof PayloadTooLargeError);
    assert.equal(e.status, 413);
    assert.equal(e.limit, 1024);
    assert.equal(e.code, "E9004");
    return true;
  });
  assert.equal(await client.files.exists("big.bin"), false);
  // Streamed from disk, the declared length is refused before the body is sent, and the local
  // file is closed (the test's resource sanitizer would see it otherwise).
  const local = await Deno.makeTempFile({ prefix: "sandbar-sdk-413-" });
  try {
    await Deno.writeFile(local, allBytes(8192));
    await assert.rejects(client.files.uploadFile(local, "big.bin"), PayloadTooLargeError);
  } finally {
    await Deno.remove(local);
  }
  assert.equal(await client.files.exists("big.bin"), false);
});
