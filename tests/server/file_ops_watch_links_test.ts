// A recursive watch never follows a link and never blocks the server: a tree holding a link to
// `/` used to make one `GET /files/watch?recursive=true` walk the whole file system on the
// JavaScript thread (every request waited minutes) and report changes outside the tree.
// Detected by /health answering while the watch is set up, by the server's inotify watch count,
// and by a marker written outside through the link never showing up in the stream.
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { inotifyWatchCount } from "./fixtures/files/helpers.ts";

const enc = encodeURIComponent;

type Event = Record<string, string>;

/** An NDJSON reader over a watch response. */
function events(res: Response) {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const seen: Event[] = [];
  let text = "";
  return {
    seen,
    async until(found: (e: Event) => boolean): Promise<Event> {
      while (true) {
        const hit = seen.find(found);
        if (hit) return hit;
        const { value, done } = await reader.read();
        if (done) throw new Error(`the watch stream ended: ${JSON.stringify(seen)}`);
        text += value;
        let nl: number;
        while ((nl = text.indexOf("\n")) !== -1) {
          seen.push(JSON.parse(text.slice(0, nl)));
          text = text.slice(nl + 1);
        }
      }
    },
    cancel: () => reader.cancel(),
  };
}

/** base/root/ws is the allowed tree, with links to `/` and to base/outside inside it. */
async function layout(): Promise<string> {
  const base = await Deno.makeTempDir({ prefix: "sandbar-test-watch-links-" });
  const ws = `${base}/root/ws`;
  for (let i = 0; i < 40; i++) await Deno.mkdir(`${ws}/tree/d${i}/e`, { recursive: true });
  await Deno.mkdir(`${base}/outside/deep`, { recursive: true });
  await Deno.symlink("/", `${ws}/slash`);
  await Deno.symlink("/usr", `${ws}/tree/usr`); // a big tree that walks without errors
  await Deno.symlink("../../outside", `${ws}/tree/d0/out`);
  return base;
}

async function withServer(symlinks: string, fn: (s: TestServer, base: string) => Promise<void>) {
  const base = await layout();
  try {
    await using server = await startTestServer({
      root: `${base}/root`,
      policy: { paths: { allow: ["ws"], symlinks } },
      args: ["--no-narrow"],
    });
    await fn(server, base);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
}

for (const symlinks of ["allow", "within"]) {
  Deno.test(`watch (symlinks: ${symlinks}): a link to / is neither walked nor reported`, async () => {
    await withServer(symlinks, async (server, base) => {
      const ws = `${base}/root/ws`;
      const before = await inotifyWatchCount(server.pid);
      const opening = server.fetch(`/files/watch?path=${enc("ws")}&recursive=true`);
      // The server keeps answering while the watch is being set up.
      const health = await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(5000) });
      assert.equal(health.status, 200);
      await health.body?.cancel();
      const res = await opening;
      assert.equal(res.status, 200);
      const stream = events(res);
      try {
        await stream.until((e) => e.type === "start");
        // ws, tree, 40 × (dN, dN/e): the links are entries, never watched through.
        assert.equal((await inotifyWatchCount(server.pid)) - before, 2 + 80);

        // Changes outside, reached through the links: never reported.
        await Deno.writeTextFile(`${base}/outside/marker-out.txt`, "x");
        await Deno.writeTextFile(`${base}/outside/deep/marker-deep.txt`, "x");
        const tmp = await Deno.makeTempFile({ prefix: "sandbar-marker-slash-" });
        // A directory moved out of the tree is let go: what happens in it later is not reported.
        await Deno.mkdir(`${ws}/tree/d1/leaving`);
        await stream.until((e) => e.type === "create" && e.path.endsWith("/leaving"));
        await Deno.rename(`${ws}/tree/d1/leaving`, `${base}/outside/left`);
        await stream.until((e) => e.type === "delete" && e.path.endsWith("/leaving"));
        await Deno.writeTextFile(`${base}/outside/left/marker-left.txt`, "x");
        // A change inside, after all of those: once it is seen, the others would have been too.
        await Deno.writeTextFile(`${ws}/tree/d39/e/inside.txt`, "x");
        await stream.until((e) => e.type === "create" && e.path === `${ws}/tree/d39/e/inside.txt`);
        await Deno.remove(tmp);
        const leaked = stream.seen.filter((e) => /marker/.test(e.path ?? ""));
        assert.deepEqual(leaked, []);
        for (const e of stream.seen.slice(1)) assert.ok(e.path.startsWith(`${ws}/`), e.path);

        // A directory made later is watched too, and a link made later is not followed.
        await Deno.mkdir(`${ws}/tree/new/sub`, { recursive: true });
        await Deno.symlink(`${base}/outside`, `${ws}/tree/new/sub/out2`);
        await stream.until((e) => e.type === "create" && e.path === `${ws}/tree/new/sub/out2`);
        await Deno.writeTextFile(`${ws}/tree/new/sub/later.txt`, "x");
        await stream.until((e) => e.path === `${ws}/tree/new/sub/later.txt`);
        await Deno.writeTextFile(`${base}/outside/marker-late.txt`, "x");
        await Deno.writeTextFile(`${ws}/tree/new/sub/last.txt`, "x");
        await stream.until((e) => e.path === `${ws}/tree/new/sub/last.txt`);
        assert.deepEqual(stream.seen.filter((e) => /marker/.test(e.path ?? "")), []);
      } finally {
        await stream.cancel();
      }
    });
  });
}

Deno.test("watch: many recursive watches of a tree with a link to / keep /health prompt", async () => {
  await withServer("allow", async (server) => {
    const before = await inotifyWatchCount(server.pid);
    const watches = await Promise.all(
      Array.from({ length: 20 }, () => server.fetch(`/files/watch?path=${enc("ws")}`)),
    );
    const health = await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(5000) });
    assert.equal(health.status, 200);
    await health.body?.cancel();
    const streams = watches.map((w) => {
      assert.equal(w.status, 200);
      return events(w);
    });
    for (const stream of streams) await stream.until((e) => e.type === "start");
    // Shared: the same directories are watched once in the kernel however many clients ask.
    assert.equal((await inotifyWatchCount(server.pid)) - before, 82);
    for (const stream of streams) await stream.cancel();
    const deadline = Date.now() + 15_000;
    while ((await inotifyWatchCount(server.pid)) !== before) {
      assert.ok(Date.now() < deadline, "the watches were not released");
      await new Promise((r) => setTimeout(r, 25));
    }
  });
});
