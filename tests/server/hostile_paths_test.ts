// A corpus of hostile paths (traversal, encoded separators, NUL, overlong, Unicode look-alikes,
// links in parents, absolute escapes, `//`, trailing dots, backslashes), tried on every
// path-taking endpoint over real HTTP. The server runs with --no-narrow, so its guards are the
// only thing between a request and the canaries planted outside the root: none may be read,
// changed, or joined by a new file, and no answer may be a 5xx.
import assert from "node:assert/strict";
import { ENDPOINTS_BY_ID } from "../../server/endpoints.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { treeOf } from "./fixtures/files/helpers.ts";

const CANARY = `canary-${crypto.randomUUID()}`;
const PWNED = `pwned-${crypto.randomUUID()}`;

/** The layout: base/root is the server's root (and allowed tree); the canaries are outside. */
async function plant(base: string): Promise<void> {
  await Deno.mkdir(`${base}/outside/sub`, { recursive: true });
  await Deno.mkdir(`${base}/rootx`, { recursive: true });
  await Deno.writeTextFile(`${base}/outside/canary.txt`, CANARY);
  await Deno.writeTextFile(`${base}/outside/sub/canary.txt`, CANARY);
  await Deno.writeTextFile(`${base}/canary.txt`, CANARY);
  // A sibling whose name starts with the root's: "/…/root" must not admit "/…/rootx".
  await Deno.writeTextFile(`${base}/rootx/canary.txt`, CANARY);
  await restoreRoot(base);
}

/** (Re)make what the corpus walks through inside the root; deletes and moves may undo it. */
async function restoreRoot(base: string): Promise<void> {
  const root = `${base}/root`;
  await Deno.mkdir(`${root}/ws/dir`, { recursive: true });
  await Deno.writeTextFile(`${root}/ws/file.txt`, "inside");
  const links: [string, string][] = [
    ["..", "link_up"],
    ["../outside", "link_out"],
    [`${base}/outside`, "link_abs"],
    ["/etc", "link_etc"],
    ["../../../outside/canary.txt", "ws/dir/inner_up"],
    ["loop", "loop"],
    ["ws/../../outside", "link_dots"],
  ];
  try {
    await Deno.lstat(`${root}/ws/.git`);
  } catch {
    // A real repository, so git's path parameter has something to admit.
    const git = await new Deno.Command("git", {
      args: ["init", "-q", `${root}/ws`],
      stdout: "null",
      stderr: "null",
    }).output();
    assert.equal(git.code, 0);
  }
  for (const [target, name] of links) {
    try {
      await Deno.symlink(target, `${root}/${name}`);
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    }
  }
}

/** At least 200 hostile paths, built from traversal tokens, encodings and look-alikes. */
function corpus(base: string): string[] {
  const root = `${base}/root`;
  const ups = [
    "../",
    "..\\",
    "%2e%2e%2f",
    "%2e%2e/",
    "..%2f",
    "%2e%2e%5c",
    "..%5c",
    "%252e%252e%252f",
    "..%c0%af",
    "..%c1%9c",
    "%c0%ae%c0%ae/",
    ".%2e/",
    "%2e./",
    "..;/",
    "..//",
    "....//",
    "...//",
    ". ./",
    ".. /",
    "\u2025/",
    "\uff0e\uff0e/",
    "\uff0e\uff0e\uff0f",
    "..\u2215",
    "..\uff0f",
    "..\u2044",
    "..\u29f8",
    ".\u200b./",
    "..\t/",
    "./../",
    "ws/../../",
  ];
  const targets = ["outside/canary.txt", "canary.txt", "etc/passwd"];
  const out = new Set<string>();
  for (const up of ups) {
    for (const depth of [1, 2, 8]) {
      for (const target of targets) out.add(up.repeat(depth) + target);
    }
    out.add(`ws/${up}${up}outside`);
  }
  for (
    const p of [
      `${base}/outside/canary.txt`,
      `${base}/canary.txt`,
      `${base}/rootx/canary.txt`,
      `${root}x/canary.txt`,
      `${root}/../outside/canary.txt`,
      `${root}/./../outside`,
      `${root}/..`,
      `${root}/ws/../../canary.txt`,
      `//${base}//outside//canary.txt`,
      `/${base}/outside/`,
      "/etc/passwd",
      "/etc/shadow",
      "//etc//passwd",
      "///",
      "/",
      "/proc/self/environ",
      `/proc/self/root${base}/outside/canary.txt`,
      "/proc/self/cwd/../../etc/passwd",
      "/proc/self/fd/0",
      "/dev/null",
      "/tmp",
      `/tmp/${PWNED}`,
      "..",
      "...",
      "....",
      ".",
      "./",
      "ws/..",
      "ws/../..",
      "ws/./../../outside/canary.txt",
      "link_up/outside/canary.txt",
      "link_up/canary.txt",
      "link_up/rootx/canary.txt",
      "link_out/canary.txt",
      "link_out/sub/canary.txt",
      "link_out",
      "link_out/",
      "link_out/.",
      "link_out/./canary.txt",
      "link_out/new-file.txt",
      "link_out/newdir/x",
      "link_abs/canary.txt",
      "link_abs",
      "link_etc/passwd",
      "link_etc",
      "link_dots/canary.txt",
      "link_up",
      "ws/dir/inner_up",
      "ws/dir/../../link_out/canary.txt",
      "loop",
      "loop/x",
      "ws/file.txt\0",
      "\0",
      "ws\0/../../outside",
      "ws/file.txt%00",
      "a".repeat(4097),
      `ws/${"x/".repeat(3000)}`,
      "é".repeat(2049),
      `${"../".repeat(2000)}etc/passwd`,
      "outside.",
      "ws/file.txt.",
      "ws/file.txt ",
      "ws/file.txt::$DATA",
      "link_out.",
      "~",
      "~/",
      "~root/.ssh/id_rsa",
      "$HOME",
      "${HOME}/x",
      "`id`",
      "$(id)",
      "file:///etc/passwd",
      "http://127.0.0.1/",
      "C:\\Windows\\win.ini",
      "\\\\?\\C:\\",
      "..\\..\\outside\\canary.txt",
      "\\..\\outside",
      "\u2215etc\u2215passwd",
      "\uff0fetc\uff0fpasswd",
      "ws\u2215..\u2215..\u2215outside",
      "\uff0e\uff0e\uff0foutside\uff0fcanary.txt",
      "\u202e/txt.yranac/edistuo/..",
      "ws/\u0000",
      "ws/%2f..%2f..%2foutside",
      "ws%2f..%2f..%2foutside%2fcanary.txt",
      "%2e%2e",
      "%2fetc%2fpasswd",
      "ws/..%252f..%252foutside",
      "ws?/../../outside",
      "ws#/../../outside",
      "ws&path=/etc/passwd",
      " /etc/passwd",
      "\t../outside",
      "\n/etc/passwd",
    ]
  ) out.add(p);
  return [...out];
}

/** Paths that must be admitted, so the harness proves each request reaches its handler. */
function benign(base: string): string[] {
  const root = `${base}/root`;
  return [
    "ws",
    "ws/file.txt",
    "./ws/dir/../file.txt",
    `${root}/ws/file.txt`,
    "ws//dir",
    "file.txt",
  ];
}

interface Outcome {
  status: number;
  text: string;
  label: string;
}

async function textOf(res: Response): Promise<string> {
  if (res.headers.get("content-type") === "application/gzip" && res.status === 200) {
    const bytes = new Uint8Array(await res.arrayBuffer().catch(() => new ArrayBuffer(0)));
    let text = "";
    try {
      const reader = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))
        .pipeThrough(new TextDecoderStream("latin1")).getReader();
      while (true) {
        const { value, done } = await reader.read();
        if (done) break;
        text += value;
      }
    } catch { /* cut short */ }
    return text;
  }
  if (res.headers.get("content-type") === "application/x-ndjson") {
    // A watch that was admitted: its first line says where; then leave.
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    const first = await reader.read();
    await reader.cancel();
    return first.value ?? "";
  }
  return await res.text();
}

/** Every way a file_ops endpoint takes a path, as requests for one hostile path. */
function fileOpsRequests(server: TestServer, p: string, i: number) {
  const q = encodeURIComponent(p);
  const post = (body: unknown) => ({ method: "POST", body: JSON.stringify(body) });
  const form = (fields: Record<string, string | File>) => {
    const f = new FormData();
    for (const [k, v] of Object.entries(fields)) f.append(k, v);
    return { method: "POST", body: f };
  };
  const raw = (path: string) => `${path}?path=${p.replace(/[#&]/g, encodeURIComponent)}`;
  return [
    ["files_stat", () => server.fetch(`/files/stat?path=${q}`)],
    ["files_stat raw", () => server.fetch(raw("/files/stat"))],
    ["files_list", () => server.fetch(`/files/list?path=${q}&depth=3`)],
    ["files_list raw", () => server.fetch(raw("/files/list"))],
    ["files_download", () => server.fetch(`/files?path=${q}`)],
    ["files_download raw", () => server.fetch(raw("/files"))],
    ["files_download_legacy", () => server.fetch(`/download?path=${q}`)],
    ["files_archive", () => server.fetch(`/files/archive?path=${q}`)],
    ["files_archive raw", () => server.fetch(raw("/files/archive"))],
    ["files_watch", () => server.fetch(`/files/watch?path=${q}`)],
    ["files_search", () => server.fetch("/files/search", post({ path: p, content: "canary-" }))],
    ["files_upload", () => server.fetch(`/files?path=${q}`, { method: "POST", body: PWNED })],
    ["files_upload raw", () => server.fetch(raw("/files"), { method: "POST", body: PWNED })],
    [
      "files_upload multipart",
      () => server.fetch(`/files?path=${q}`, form({ f: new File([PWNED], "x.txt") })),
    ],
    [
      "files_upload_legacy path field",
      () => server.fetch("/upload", form({ path: p, f: new File([PWNED], "x.txt") })),
    ],
    [
      "files_upload_legacy file name",
      () => server.fetch("/upload", form({ path: "ws/", f: new File([PWNED], p) })),
    ],
    ["files_mkdir", () => server.fetch("/files/mkdir", post({ path: p }))],
    [
      "files_move destination",
      () => server.fetch("/files/move", post({ source: "ws/file.txt", destination: p })),
    ],
    [
      "files_move source",
      () => server.fetch("/files/move", post({ source: p, destination: `ws/moved-${i}` })),
    ],
    [
      "files_delete",
      () => server.fetch(`/files?path=${q}&recursive=true`, { method: "DELETE" }),
    ],
  ] as const;
}

/**
 * The hook for the other groups' path-taking endpoints (a shell's `cwd`, a terminal's `cwd`,
 * `run_code`'s `cwd`, git's `path`): each is tried when the server has it on, and an admitted
 * request must report a working directory or repository inside the root.
 */
function otherGroupsRequests(server: TestServer, p: string) {
  const at = (id: string) => ENDPOINTS_BY_ID.get(id)!.path;
  const post = (body: unknown) => ({ method: "POST", body: JSON.stringify(body) });
  return [
    ["shell cwd", "shell", () => server.fetch(at("shell"), post({ cmd: "pwd -P", cwd: p }))],
    [
      "run_code cwd",
      "run_code",
      () => server.fetch(at("run_code"), post({ code: "pwd -P", language: "bash", cwd: p })),
    ],
    [
      "git_status path",
      "git_status",
      () => server.fetch(`${at("git_status")}?path=${encodeURIComponent(p)}`),
    ],
    [
      "git_diff path",
      "git_diff",
      () => server.fetch(`${at("git_diff")}?path=${encodeURIComponent(p)}`),
    ],
    ["pty_create cwd", "pty_create", () => server.fetch(at("pty_create"), post({ cwd: p }))],
  ] as const;
}

/** Run `jobs` with at most `width` in flight. */
async function pool<T>(jobs: (() => Promise<T>)[], width: number): Promise<T[]> {
  const out: T[] = new Array(jobs.length);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < jobs.length) {
      const i = next++;
      out[i] = await jobs[i]();
    }
  }));
  return out;
}

Deno.test("hostile paths: none escapes through any path-taking endpoint", async (t) => {
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "sandbar-test-hostile-" }));
  try {
    await plant(base);
    const root = `${base}/root`;
    const hostile = corpus(base);
    assert.ok(hostile.length >= 200, `only ${hostile.length} hostile paths`);
    const paths = [...hostile, ...benign(base)];
    const outsideBefore = await treeOf(base, (rel) => rel === "root" || rel.startsWith("root/"));
    await using server = await startTestServer({
      root,
      policy: { preset: "open", paths: { symlinks: "within" }, audit: "off" },
      args: ["--no-narrow"],
    });
    const capabilities = await (await server.fetch("/capabilities")).json();
    const on = (id: string) => capabilities.endpoints?.[id]?.allowed === true;

    const check = (o: Outcome) => {
      assert.ok(o.status < 500, `${o.label}: ${o.status} ${o.text.slice(0, 300)}`);
      assert.ok(!o.text.includes(CANARY), `${o.label} read a canary: ${o.text.slice(0, 300)}`);
    };

    await t.step(`file_ops endpoints × ${hostile.length} hostile paths`, async () => {
      const kinds = fileOpsRequests(server, "", 0).map(([label]) => label);
      for (const kind of kinds) {
        const jobs = paths.map((p, i) => async (): Promise<Outcome> => {
          const [, request] = fileOpsRequests(server, p, i).find(([label]) => label === kind)!;
          const res = await request();
          return {
            status: res.status,
            text: await textOf(res),
            label: `${kind} ${JSON.stringify(p)}`,
          };
        });
        const outcomes = await pool(jobs, 6);
        for (const o of outcomes) check(o);
        assert.ok(outcomes.some((o) => o.status < 300), `${kind}: nothing was admitted`);
        await restoreRoot(base);
      }
    });

    await t.step("the other groups' path parameters (where those endpoints are on)", async (t) => {
      const realRoot = await Deno.realPath(root);
      for (const [label, id] of otherGroupsRequests(server, "")) {
        if (!on(id)) {
          await t.step({ name: `${label}: endpoint off here`, ignore: true, fn: () => {} });
          continue;
        }
        await t.step(label, async () => {
          let admitted = 0;
          const jobs = paths.map((p) => async () => {
            const [, , request] = otherGroupsRequests(server, p).find(([l]) => l === label)!;
            const res = await request();
            const text = await res.text();
            const o = { status: res.status, text, label: `${label} ${JSON.stringify(p)}` };
            check(o);
            if (res.status >= 200 && res.status < 300) {
              admitted++;
              const body = JSON.parse(text);
              const where = String(body.stdout ?? body.cwd ?? body.repository ?? body.path ?? "")
                .trim();
              assert.ok(
                where === "" || where === realRoot || where.startsWith(`${realRoot}/`) ||
                  where === root || where.startsWith(`${root}/`),
                `${o.label} ran in ${where}`,
              );
              if (id === "pty_create" && body.id) {
                await (await server.fetch(`/pty/${body.id}`, { method: "DELETE" })).body?.cancel();
              }
            }
          });
          await pool(jobs, 4);
          assert.ok(admitted > 0, `${label}: nothing was admitted`);
          await restoreRoot(base);
        });
      }
    });

    await t.step("the canaries are untouched and nothing appeared outside the root", async () => {
      const outsideAfter = await treeOf(base, (rel) => rel === "root" || rel.startsWith("root/"));
      assert.deepEqual(outsideAfter, outsideBefore);
      for (
        const f of [
          "outside/canary.txt",
          "outside/sub/canary.txt",
          "canary.txt",
          "rootx/canary.txt",
        ]
      ) {
        assert.equal(await Deno.readTextFile(`${base}/${f}`), CANARY, f);
      }
      await assert.rejects(Deno.lstat(`/tmp/${PWNED}`), Deno.errors.NotFound);
    });
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});
