// What a file endpoint reads must be a regular file with one name: FIFOs, devices and sockets
// are refused with a clear error (a FIFO must never hold a download open), and a hard link
// inside the allowed tree to a file outside it does not expose that file through download,
// archive or search. Each attack is detected by its side effect: the secret's bytes in an
// answer, a download that never ends, every other download starved.
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { assertError, run } from "./fixtures/files/helpers.ts";

const enc = encodeURIComponent;
const SECRET = `secret-${crypto.randomUUID()}`;

/** base/root/ws is the allowed tree; base/outside/secret.txt lies outside it. */
async function layout(): Promise<string> {
  const base = await Deno.makeTempDir({ prefix: "sandbar-test-kinds-" });
  const ws = `${base}/root/ws`;
  await Deno.mkdir(`${ws}/dir`, { recursive: true });
  await Deno.mkdir(`${base}/outside`);
  await Deno.writeTextFile(`${base}/outside/secret.txt`, `${SECRET}\n`);
  await Deno.writeTextFile(`${ws}/.env`, `${SECRET}\n`);
  await Deno.writeTextFile(`${ws}/plain.txt`, "plain\n");
  await run("mkfifo", [`${ws}/pipe`, `${ws}/dir/pipe2`]);
  // The same file under a second name inside the tree: nothing tells it from an original.
  await Deno.link(`${base}/outside/secret.txt`, `${ws}/dir/hard.txt`);
  await Deno.link(`${ws}/.env`, `${ws}/env-copy.txt`);
  return base;
}

async function withServer(fn: (server: TestServer, base: string) => Promise<void>) {
  const base = await layout();
  try {
    await using server = await startTestServer({
      root: `${base}/root`,
      policy: { paths: { allow: ["ws"], deny: ["**/.env"], symlinks: "within" } },
      args: ["--no-narrow"],
    });
    await fn(server, base);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
}

/** The server answers a plain download within `ms`, or the test fails. */
async function downloadsStillWork(server: TestServer, ms: number): Promise<void> {
  const res = await server.fetch(`/files?path=${enc("ws/plain.txt")}`, {
    signal: AbortSignal.timeout(ms),
  });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), "plain\n");
}

Deno.test("file kinds: FIFOs, devices and sockets are refused, never opened to hang", async (t) => {
  await withServer(async (server, base) => {
    const ws = `${base}/root/ws`;
    await t.step("download of a FIFO: 400 invalid_arguments naming the kind", async () => {
      for (const route of ["/files", "/download"]) {
        const body = await assertError(
          await server.fetch(`${route}?path=${enc("ws/pipe")}`, {
            signal: AbortSignal.timeout(10_000),
          }),
          400,
          "invalid_arguments",
          route,
        );
        assert.match(String(body.error), /is a FIFO/);
        assert.equal(body.param, "path");
      }
    });

    await t.step("600 FIFO downloads at once do not starve other downloads", async () => {
      const attacks = Array.from(
        { length: 600 },
        () =>
          server.fetch(`/files?path=${enc("ws/pipe")}`, { signal: AbortSignal.timeout(30_000) })
            .then((r) => r.status),
      );
      await downloadsStillWork(server, 10_000);
      const statuses = await Promise.all(attacks);
      assert.deepEqual(new Set(statuses), new Set([400]));
      await downloadsStillWork(server, 10_000);
    });

    await t.step("a link in the tree to a character device is refused too", async () => {
      await Deno.symlink("/dev/zero", `${ws}/zero`);
      // Under `within` the link leads outside; under `allow` (below) it would be followed.
      await assertError(await server.fetch(`/files?path=${enc("ws/zero")}`), 403, "symlink_denied");
    });

    await t.step("a unix socket is refused for download", async () => {
      const listener = Deno.listen({ transport: "unix", path: `${ws}/sock` });
      try {
        const body = await assertError(
          await server.fetch(`/files?path=${enc("ws/sock")}`),
          400,
          "invalid_arguments",
        );
        assert.match(String(body.error), /is a socket/);
      } finally {
        listener.close();
      }
    });

    await t.step("upload over a FIFO is 409 conflict and leaves the FIFO", async () => {
      const res = await server.fetch(`/files?path=${enc("ws/pipe")}&overwrite=true`, {
        method: "POST",
        body: "data",
      });
      const body = await assertError(res, 409, "conflict");
      assert.match(String(body.error), /FIFO/);
      assert.equal((await Deno.lstat(`${ws}/pipe`)).isFifo, true);
    });

    await t.step("archive and search skip FIFOs without blocking", async () => {
      const archive = await server.fetch(`/files/archive?path=${enc("ws/dir")}`, {
        signal: AbortSignal.timeout(10_000),
      });
      assert.equal(archive.status, 200);
      await archive.arrayBuffer();
      const search = await server.fetch("/files/search", {
        method: "POST",
        body: JSON.stringify({ path: "ws", content: "zzz", timeout_ms: 5000 }),
        signal: AbortSignal.timeout(10_000),
      });
      assert.equal(search.status, 200);
      assert.equal((await search.json()).timed_out, false);
    });
  });
});

Deno.test("file kinds: devices under an allow-all policy are refused for download", async () => {
  await using server = await startTestServer({
    policy: { paths: { allow: ["/"], symlinks: "allow" } },
    args: ["--no-narrow"],
  });
  for (const dev of ["/dev/zero", "/dev/urandom", "/dev/null"]) {
    const body = await assertError(
      await server.fetch(`/files?path=${enc(dev)}`, { signal: AbortSignal.timeout(10_000) }),
      400,
      "invalid_arguments",
      dev,
    );
    assert.match(String(body.error), /character device/);
  }
});

Deno.test("file kinds: a hard link to a file outside the tree exposes nothing", async (t) => {
  await withServer(async (server) => {
    await t.step("download is 403 path_not_allowed, both names of the file", async () => {
      for (const p of ["ws/dir/hard.txt", "ws/env-copy.txt"]) {
        const res = await server.fetch(`/files?path=${enc(p)}`);
        const text = await res.text();
        assert.equal(res.status, 403, text);
        assert.equal(JSON.parse(text).code, "path_not_allowed");
        assert.doesNotMatch(text, new RegExp(SECRET));
      }
    });

    await t.step("archive leaves the file out", async () => {
      const res = await server.fetch(`/files/archive?path=${enc("ws")}`);
      assert.equal(res.status, 200);
      const tar = new Uint8Array(
        await new Response(res.body!.pipeThrough(new DecompressionStream("gzip"))).arrayBuffer(),
      );
      const text = new TextDecoder("latin1").decode(tar);
      assert.doesNotMatch(text, new RegExp(SECRET));
      assert.doesNotMatch(text, /hard\.txt/);
      assert.match(text, /plain\.txt/); // the archive itself is there
    });

    await t.step("content search does not read it", async () => {
      const res = await server.fetch("/files/search", {
        method: "POST",
        body: JSON.stringify({ path: "ws", content: SECRET.slice(0, 20) }),
      });
      const body = await res.json();
      assert.equal(res.status, 200);
      assert.deepEqual(body.matches, []);
      const plain = await server.fetch("/files/search", {
        method: "POST",
        body: JSON.stringify({ path: "ws", content: "plain" }),
      });
      assert.equal((await plain.json()).matches.length, 1); // search itself works
    });

    await t.step("a file with one name again is readable", async () => {
      const res = await server.fetch(`/files?path=${enc("ws/plain.txt")}`);
      assert.equal(await res.text(), "plain\n");
    });
  });
});
