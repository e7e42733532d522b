// Uploads cut off halfway, body limits, extension rules, and watching real file changes: the
// file_ops behaviours that depend on streams, over real HTTP against the real server.
import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";
import {
  assertError,
  inotifyWatchCount,
  namesIn,
  randomBytes,
  serverChildPid,
} from "./fixtures/files/helpers.ts";
import { eventually } from "../helpers/wait.ts";

const TEMP = /^\.sandbar-upload-/;
const json = (body: unknown) => ({ method: "POST", body: JSON.stringify(body) });

/** Wait until the server's upload temp file is in `dir` (it is writing), or gone (cleaned up). */
async function waitForTempFile(dir: string, present: boolean): Promise<void> {
  await eventually(
    present ? "the temp file" : "the temp file to be removed",
    async () => (await namesIn(dir)).some((n) => TEMP.test(n)) === present,
  );
}

/** A request body that sends `chunks` of 64 KiB, then waits forever (until aborted). */
function stallingBody(chunks: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent < chunks) {
        sent++;
        controller.enqueue(randomBytes(64 * 1024));
        return;
      }
      await new Promise(() => {}); // stall: the client aborts from outside
    },
  });
}

Deno.test("file_ops: an upload cut off halfway leaves the old file or none, and no temp file", async (t) => {
  await using server = await startTestServer();
  const root = server.root;
  await Deno.mkdir(`${root}/d`);
  await Deno.writeTextFile(`${root}/d/keep.txt`, "old content");

  for (const [name, target] of [["over an existing file", "keep.txt"], ["a new file", "new.bin"]]) {
    await t.step(`client aborts mid-body: ${name}`, async () => {
      const abort = new AbortController();
      const request = server.fetch(`/files?path=d/${target}`, {
        method: "POST",
        body: stallingBody(8),
        signal: abort.signal,
      }).then((r) => r.body?.cancel(), () => "aborted");
      // The server is writing: its temp file is there, with part of the body in it.
      await waitForTempFile(`${root}/d`, true);
      abort.abort();
      assert.equal(await request, "aborted");
      await waitForTempFile(`${root}/d`, false);
      const names = await namesIn(`${root}/d`);
      assert.deepEqual(names, ["keep.txt"]);
      assert.equal(await Deno.readTextFile(`${root}/d/keep.txt`), "old content");
    });
  }

  await t.step("the connection dies with a Content-Length body half sent", async () => {
    const { port } = new URL(server.url);
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
    await conn.write(
      new TextEncoder().encode(
        `POST /files?path=d/keep.txt HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.token}\r\n` +
          `Content-Length: 1000000\r\n\r\n${"x".repeat(200_000)}`,
      ),
    );
    await waitForTempFile(`${root}/d`, true);
    conn.close();
    await waitForTempFile(`${root}/d`, false);
    assert.deepEqual(await namesIn(`${root}/d`), ["keep.txt"]);
    assert.equal(await Deno.readTextFile(`${root}/d/keep.txt`), "old content");
  });

  await t.step("a multipart upload aborted mid-file leaves nothing", async () => {
    const abort = new AbortController();
    const boundary = "sandbarTestBoundary";
    let sent = false;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (!sent) {
          sent = true;
          controller.enqueue(new TextEncoder().encode(
            `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="part.bin"\r\n\r\n`,
          ));
          controller.enqueue(randomBytes(256 * 1024));
          return;
        }
        await new Promise(() => {});
      },
    });
    const request = server.fetch("/files?path=d/", {
      method: "POST",
      headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
      body,
      signal: abort.signal,
    }).then((r) => r.body?.cancel(), () => "aborted");
    await waitForTempFile(`${root}/d`, true);
    abort.abort();
    assert.equal(await request, "aborted");
    await waitForTempFile(`${root}/d`, false);
    assert.deepEqual(await namesIn(`${root}/d`), ["keep.txt"]);
  });
});

Deno.test("file_ops: payload_too_large on upload, declared or streamed, loses nothing", async (t) => {
  await using server = await startTestServer({
    policy: {
      endpoints: {
        files_upload: { limits: { body_bytes: 100_000 } },
        files_upload_legacy: { limits: { body_bytes: 100_000 } },
      },
    },
  });
  const root = server.root;
  await Deno.writeTextFile(`${root}/keep.txt`, "old content");

  await t.step("Content-Length over the limit: 413 before reading", async () => {
    const body = await assertError(
      await server.fetch("/files?path=keep.txt", { method: "POST", body: randomBytes(200_000) }),
      413,
      "payload_too_large",
    );
    assert.equal(body.limit, 100_000);
    assert.equal(await Deno.readTextFile(`${root}/keep.txt`), "old content");
  });

  await t.step("a chunked body passing the limit: 413, old file kept, no temp file", async () => {
    for (const target of ["keep.txt", "fresh.bin"]) {
      let n = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (n++ < 4) controller.enqueue(randomBytes(40_000));
          else controller.close();
        },
      });
      await assertError(
        await server.fetch(`/files?path=${target}`, { method: "POST", body }),
        413,
        "payload_too_large",
        target,
      );
      await waitForTempFile(root, false);
      assert.deepEqual(await namesIn(root), ["keep.txt"]);
      assert.equal(await Deno.readTextFile(`${root}/keep.txt`), "old content");
    }
  });

  await t.step("legacy multipart over the limit: 413", async () => {
    const form = new FormData();
    form.append("file", new File([randomBytes(150_000)], "big.bin"));
    await assertError(
      await server.fetch("/upload", { method: "POST", body: form }),
      413,
      "payload_too_large",
    );
    assert.deepEqual(await namesIn(root), ["keep.txt"]);
  });

  await t.step("under the limit: fine", async () => {
    const res = await server.fetch("/files?path=small.bin", {
      method: "POST",
      body: randomBytes(99_000),
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  });
});

Deno.test("file_ops: extension_not_allowed by upload.deny_extensions and allow_extensions", async (t) => {
  await t.step("deny list", async () => {
    await using server = await startTestServer({
      policy: { upload: { deny_extensions: ["sh", ".EXE"] } },
    });
    for (const name of ["run.sh", "RUN.SH", "x.exe", "trail.sh.", "space.sh ", "a.b.exe"]) {
      await assertError(
        await server.fetch(`/files?path=${encodeURIComponent(name)}`, {
          method: "POST",
          body: "#!/bin/sh",
        }),
        403,
        "extension_not_allowed",
        name,
      );
    }
    const form = new FormData();
    form.append("file", new File(["x"], "evil.sh"));
    await assertError(
      await server.fetch("/upload", { method: "POST", body: form }),
      403,
      "extension_not_allowed",
    );
    assert.deepEqual(await namesIn(server.root), []);
    const ok = await server.fetch("/files?path=notes.txt", { method: "POST", body: "fine" });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
    // A rename cannot smuggle a refused name in.
    await assertError(
      await server.fetch("/files/move", json({ source: "notes.txt", destination: "notes.sh" })),
      403,
      "extension_not_allowed",
    );
    assert.deepEqual(await namesIn(server.root), ["notes.txt"]);
  });

  await t.step("allow list", async () => {
    await using server = await startTestServer({
      policy: { upload: { allow_extensions: [".txt", ".tar.gz"] } },
    });
    const cases: [string, number][] = [["a.txt", 200], ["b.tar.gz", 200], ["c.gz", 403], [
      "d",
      403,
    ]];
    for (const [name, status] of cases) {
      const res = await server.fetch(`/files?path=${name}`, { method: "POST", body: "x" });
      if (status === 200) {
        assert.equal(res.status, 200, name);
        await res.body?.cancel();
      } else await assertError(res, 403, "extension_not_allowed", String(name));
    }
    assert.deepEqual(await namesIn(server.root), ["a.txt", "b.tar.gz"]);
  });
});

/** Read NDJSON lines from a watch response until `until` says stop. */
async function readEvents(
  reader: ReadableStreamDefaultReader<string>,
  until: (events: Record<string, string>[]) => boolean,
  buffered: { text: string; events: Record<string, string>[] },
): Promise<void> {
  while (!until(buffered.events)) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the watch stream ended");
    buffered.text += value;
    let nl: number;
    while ((nl = buffered.text.indexOf("\n")) !== -1) {
      buffered.events.push(JSON.parse(buffered.text.slice(0, nl)));
      buffered.text = buffered.text.slice(nl + 1);
    }
  }
}

Deno.test("file_ops: watch streams real changes and closes its watcher when the client leaves", async (t) => {
  await using server = await startTestServer({ policy: { paths: { deny: ["**/*.secret"] } } });
  const root = server.root;
  await Deno.mkdir(`${root}/w/sub`, { recursive: true });
  const child = await serverChildPid(server.pid);
  const before = await inotifyWatchCount(child);

  await t.step("create, modify, rename, delete; denied paths are left out", async () => {
    const res = await server.fetch("/files/watch?path=w");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/x-ndjson");
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    const seen = { text: "", events: [] as Record<string, string>[] };
    await readEvents(reader, (e) => e.length >= 1, seen);
    assert.deepEqual(seen.events[0], { type: "start", path: `${root}/w`, recursive: true });
    assert.ok((await inotifyWatchCount(child)) > before);

    const has = (type: string, path: string) => (e: Record<string, string>[]) =>
      e.some((x) => x.type === type && x.path === path);
    await Deno.writeTextFile(`${root}/w/a.secret`, "hidden");
    await Deno.writeTextFile(`${root}/w/sub/new.txt`, "1");
    await readEvents(reader, has("create", `${root}/w/sub/new.txt`), seen);
    await Deno.writeTextFile(`${root}/w/sub/new.txt`, "2", { append: true });
    await readEvents(reader, has("modify", `${root}/w/sub/new.txt`), seen);
    await Deno.rename(`${root}/w/sub/new.txt`, `${root}/w/sub/renamed.txt`);
    await readEvents(reader, has("rename", `${root}/w/sub/renamed.txt`), seen);
    const rename = seen.events.find((e) => e.type === "rename")!;
    assert.equal(rename.from, `${root}/w/sub/new.txt`);
    await Deno.remove(`${root}/w/sub/renamed.txt`);
    await readEvents(reader, has("delete", `${root}/w/sub/renamed.txt`), seen);
    assert.ok(!seen.events.some((e) => e.path?.endsWith(".secret")), JSON.stringify(seen.events));
    for (const e of seen.events.slice(1)) assert.ok(!Number.isNaN(Date.parse(e.time)));
    await reader.cancel();
  });

  await t.step("the watcher is closed once the client has gone", async () => {
    await eventually(
      "the watcher to close",
      async () => (await inotifyWatchCount(child)) === before,
    );
  });

  await t.step("a client that aborts its request also frees the watcher", async () => {
    const abort = new AbortController();
    const res = await server.fetch("/files/watch?path=w&recursive=false", {
      signal: abort.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    assert.ok((await inotifyWatchCount(child)) > before);
    abort.abort();
    await reader.read().catch(() => {});
    await eventually(
      "the watcher to close",
      async () => (await inotifyWatchCount(child)) === before,
    );
  });

  await t.step("errors before the stream: missing path, bad flag", async () => {
    await assertError(await server.fetch("/files/watch?path=nope"), 404, "not_found");
    await assertError(
      await server.fetch("/files/watch?path=w&recursive=perhaps"),
      400,
      "invalid_arguments",
    );
  });
});

/** How many of `pid`'s descriptors point at `path`. */
async function openCount(pid: number, path: string): Promise<number> {
  let n = 0;
  for await (const e of Deno.readDir(`/proc/${pid}/fd`)) {
    try {
      if ((await Deno.readLink(`/proc/${pid}/fd/${e.name}`)) === path) n++;
    } catch { /* closed while listing */ }
  }
  return n;
}

Deno.test("file_ops: downloads of many chunks arrive whole, and a client that leaves frees the file", async (t) => {
  await using server = await startTestServer();
  const child = await serverChildPid(server.pid);
  // Several read chunks and an odd tail, so the read-ahead and the last short read both run.
  const bytes = randomBytes(5 * 512 * 1024 + 12345);
  const path = await Deno.realPath(server.root) + "/big.bin";
  await Deno.writeFile(path, bytes);

  await t.step("the whole file, byte for byte", async () => {
    const res = await server.fetch("/files?path=big.bin");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-length"), String(bytes.length));
    assert.deepEqual(new Uint8Array(await res.arrayBuffer()), bytes);
  });

  await t.step("a range across chunk borders, byte for byte", async () => {
    const [start, end] = [512 * 1024 - 7, 3 * 512 * 1024 + 99];
    const res = await server.fetch("/files?path=big.bin", {
      headers: { range: `bytes=${start}-${end}` },
    });
    assert.equal(res.status, 206);
    assert.deepEqual(new Uint8Array(await res.arrayBuffer()), bytes.subarray(start, end + 1));
  });

  await t.step("the file is closed when the client stops after the first chunk", async () => {
    // Larger than every socket buffer between the two, so the server is still sending.
    const huge = await Deno.realPath(server.root) + "/huge.bin";
    await Deno.writeFile(huge, new Uint8Array(96 * 1024 * 1024).fill(7));
    const abort = new AbortController();
    const res = await server.fetch("/files?path=huge.bin", { signal: abort.signal });
    const reader = res.body!.getReader();
    await reader.read();
    assert.ok((await openCount(child, huge)) > 0, "the server holds the file while sending");
    abort.abort();
    await reader.read().catch(() => {});
    await eventually("the file to be closed", async () => (await openCount(child, huge)) === 0);
  });
});
