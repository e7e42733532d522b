// No file endpoint leaks a descriptor on an error path: the server's descriptors are counted
// (from /proc/<pid>/fd) before and after hundreds of refused operations of every file endpoint,
// and after moves whose destination is refused only after the source's directory was opened
// (a directory swapped for a link in between, by a second process).
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { settled } from "../helpers/wait.ts";
import { namesIn, run } from "./fixtures/files/helpers.ts";

const FLIPPER = fileURLToPath(new URL("./fixtures/files/flipper.ts", import.meta.url));
const enc = encodeURIComponent;
const json = (body: unknown): RequestInit => ({ method: "POST", body: JSON.stringify(body) });

/** The server's descriptors that are not sockets (the test's own connections come and go). */
async function descriptors(pid: number): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(`/proc/${pid}/fd`)) {
    try {
      const target = await Deno.readLink(`/proc/${pid}/fd/${e.name}`);
      if (!target.startsWith("socket:")) out.push(target);
    } catch { /* closed meanwhile */ }
  }
  return out.sort();
}

/** Every refused request of every file endpoint, with the status it must get. */
function refusals(): [string, RequestInit, number][] {
  const up = (path: string, extra = "") => `/files?path=${enc(path)}${extra}`;
  return [
    ["/files/list?path=ws/missing", {}, 404],
    ["/files/list?path=ws/a.txt", {}, 400],
    ["/files/list?path=ws/esc", {}, 403],
    ["/files/list?path=ws/.env", {}, 403],
    ["/files/stat?path=ws/esc/x", {}, 403],
    ["/files/stat?path=/etc/passwd", {}, 403],
    ["/files/mkdir", json({ path: "ws/a.txt/x" }), 409],
    ["/files/mkdir", json({ path: "ws/esc/x" }), 403],
    ["/files?path=ws", { method: "DELETE" }, 409],
    ["/files?path=ws/missing", { method: "DELETE" }, 404],
    ["/files?path=ws/sub", { method: "DELETE" }, 409],
    ["/files/move", json({ source: "ws/a.txt", destination: "ws/b.txt" }), 409],
    ["/files/move", json({ source: "ws/sub", destination: "ws/sub/in" }), 400],
    ["/files/move", json({ source: "ws/a.txt", destination: "ws/none/x" }), 404],
    ["/files/move", json({ source: "ws/a.txt", destination: "ws/esc/x" }), 403],
    ["/files/move", json({ source: "ws/missing", destination: "ws/x" }), 404],
    ["/files/search", json({ path: "ws/missing", pattern: "*" }), 404],
    ["/files/search", json({ path: "ws/esc", pattern: "*" }), 403],
    ["/files/search", json({ path: "ws", content: "(", regex: true }), 400],
    ["/files/archive?path=ws/missing", {}, 404],
    ["/files/archive?path=ws/esc", {}, 403],
    ["/files/watch?path=ws/missing", {}, 404],
    ["/files/watch?path=ws/esc", {}, 403],
    [up("ws/sub"), { method: "POST", body: "x" }, 409],
    [up("ws/pipe"), { method: "POST", body: "x" }, 409],
    [up("ws/a.txt", "&overwrite=false"), { method: "POST", body: "x" }, 409],
    [up("ws/esc/x"), { method: "POST", body: "x" }, 403],
    [up("ws/pipe"), {}, 400],
    [up("ws/sub"), {}, 400],
    [up("ws/hard.txt"), {}, 403],
    [up("ws/missing"), {}, 404],
    [`/download?path=${enc("ws/pipe")}`, {}, 400],
  ];
}

async function layout(): Promise<string> {
  const base = await Deno.makeTempDir({ prefix: "sandbar-test-fds-" });
  const ws = `${base}/root/ws`;
  await Deno.mkdir(`${ws}/sub/deeper`, { recursive: true });
  await Deno.mkdir(`${base}/outside`);
  await Deno.writeTextFile(`${ws}/a.txt`, "a");
  await Deno.writeTextFile(`${ws}/b.txt`, "b");
  await Deno.writeTextFile(`${ws}/sub/deeper/c.txt`, "c");
  await Deno.writeTextFile(`${ws}/.env`, "SECRET=1");
  await Deno.writeTextFile(`${base}/outside/o.txt`, "o");
  await Deno.link(`${base}/outside/o.txt`, `${ws}/hard.txt`);
  await Deno.symlink("../../outside", `${ws}/esc`);
  await run("mkfifo", [`${ws}/pipe`]);
  return base;
}

async function fire(server: TestServer, times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    await Promise.all(
      refusals().map(async ([path, init, status]) => {
        const res = await server.fetch(path, init);
        const text = await res.text();
        assert.equal(
          res.status,
          status,
          `${init.method ?? "GET"} ${path} ${init.body ?? ""}: ${text}`,
        );
      }),
    );
  }
}

Deno.test("descriptors: refused operations of every file endpoint leave none open", async () => {
  const base = await layout();
  try {
    await using server = await startTestServer({
      root: `${base}/root`,
      policy: { paths: { allow: ["ws"], deny: ["**/.env"], symlinks: "within" } },
      args: ["--no-narrow"],
    });
    await fire(server, 1); // whatever is made once (libc, workers) is made now
    // The default identity's confinement is built on a thread of its own at listen.
    const before = await settled("the server's descriptors settle", () => descriptors(server.pid));
    await fire(server, 20);
    const after = await descriptors(server.pid);
    assert.deepEqual(after, before);
    assert.ok(!after.some((t) => t.startsWith(base)), after.join("\n"));
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});

Deno.test("descriptors: a move refused after its source was opened leaks nothing", async () => {
  const base = await layout();
  const ws = `${base}/root/ws`;
  try {
    await using server = await startTestServer({
      root: `${base}/root`,
      policy: { paths: { allow: ["ws"], symlinks: "within" } },
      args: ["--no-narrow"],
    });
    await Deno.mkdir(`${ws}/flip`);
    await Deno.symlink("../../outside", `${ws}/flip.link`);
    const flipper = new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-ffi", FLIPPER, ws, "flip", "flip.link"],
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const started = flipper.stdout.getReader();
    await started.read(); // "flipping"
    const codes = new Map<string, number>();
    try {
      for (let round = 0; round < 100; round++) {
        await Deno.writeTextFile(`${ws}/m-${round}.txt`, "m");
        const results = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            server.fetch(
              "/files/move",
              json({ source: `ws/m-${round}.txt`, destination: `ws/flip/m-${round}-${i}.txt` }),
            ).then(async (r) => `${r.status}:${(await r.json()).code ?? "ok"}`)),
        );
        for (const key of results) codes.set(key, (codes.get(key) ?? 0) + 1);
      }
    } finally {
      flipper.kill("SIGKILL");
      await flipper.status;
      started.releaseLock();
      await flipper.stdout.cancel();
    }
    // The race was real: some moves went through, some were refused as a swapped link.
    assert.ok(codes.get("403:symlink_denied"), JSON.stringify([...codes]));
    assert.deepEqual(await namesIn(`${base}/outside`), ["o.txt"]); // nothing moved out
    const open = (await descriptors(server.pid)).filter((t) => t.startsWith(base));
    assert.deepEqual(open, []);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});
