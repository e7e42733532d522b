/**
 * The server's own files (its data directory with `store.key` and `agents.sqlite`, its state
 * directory, the audit log, the policy file) are never reached by a file endpoint through a path
 * a sandboxed process controls, under `paths.symlinks: "allow"`, even though the server's own
 * Deno permissions let it read and write them. First with links planted in the root (every file
 * endpoint, each refused), then with a process swapping a directory for a link to the data
 * directory and a file for a link to the store key or the audit log, in a tight loop, while more
 * than a thousand requests run. Judged by the side effect: no answer holds a secret, nothing in
 * the data directory is written, moved or removed, and what is not withheld still works.
 */

import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { serverChildPid } from "./fixtures/files/helpers.ts";

const enc = encodeURIComponent;
const json = (body: unknown) => ({ method: "POST", body: JSON.stringify(body) });
const TOKEN_IN_POLICY = `policy-token-${crypto.randomUUID()}`;
const AUDIT_MARK = `audit-mark-${crypto.randomUUID()}`;
/** A body as latin1 text, so that the key's bytes compare byte for byte. */
const bodyText = async (res: Response) => new TextDecoder("latin1").decode(await res.arrayBuffer());

interface Setting {
  server: TestServer;
  base: string;
  ws: string;
  dataDir: string;
  stateDir: string;
  auditLog: string;
  policyFile: string;
  key: string;
  /** Every secret as text, to look for in answers. */
  secrets: string[];
  /** The data directory as it is (names, contents but the database's, the database's inode). */
  snapshot(): Promise<string>;
}

async function withSetting(fn: (s: Setting) => Promise<void>): Promise<void> {
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "sandbar-test-withheld-" }));
  const root = `${base}/root`;
  const ws = `${root}/ws`;
  const dataDir = `${base}/data`;
  const auditLog = `${base}/audit.log`;
  const policyFile = `${base}/policy.json`;
  await Deno.mkdir(`${ws}/elsewhere`, { recursive: true });
  await Deno.writeTextFile(`${ws}/elsewhere/open.txt`, "not withheld");
  await Deno.writeTextFile(auditLog, `${AUDIT_MARK}\n`);
  await Deno.writeTextFile(
    policyFile,
    JSON.stringify({
      endpoints: { agents: true },
      paths: { allow: ["ws"], symlinks: "allow" },
      identities: [{ id: "other", token: TOKEN_IN_POLICY, scopes: ["files:read"] }],
    }),
  );
  try {
    await using server = await startTestServer({
      root,
      args: ["--policy", policyFile, "--data-dir", dataDir, "--audit-log", auditLog],
    });
    // The store (and its key) is opened with the first agents request.
    const made = await server.post("/v1/agents", { model: "m" });
    assert.equal(made.status, 200, await made.text());
    await Deno.writeTextFile(`${dataDir}/canary`, "canary-of-the-data-directory");
    const environ = await Deno.readTextFile(`/proc/${await serverChildPid(server.pid)}/environ`);
    const stateDir = environ.split("\0").find((v) => v.startsWith("SANDBAR_STATE_DIR="))!
      .slice("SANDBAR_STATE_DIR=".length);
    await Deno.writeTextFile(`${stateDir}/state-canary`, "canary-of-the-state-directory");
    const key = await Deno.readFile(`${dataDir}/store.key`);
    const secrets = [
      new TextDecoder("latin1").decode(key),
      "SQLite format 3",
      "canary-of-the-data-directory",
      "canary-of-the-state-directory",
      AUDIT_MARK,
      TOKEN_IN_POLICY,
    ];
    const snapshot = async () => {
      const out: string[] = [];
      out.push(`agents.sqlite ${(await Deno.stat(`${dataDir}/agents.sqlite`)).ino}`);
      for await (const e of Deno.readDir(dataDir)) {
        if (e.name.startsWith("agents.sqlite")) continue;
        const text = e.isFile ? await Deno.readTextFile(`${dataDir}/${e.name}`) : "(dir)";
        out.push(`${e.name} ${text}`);
      }
      return out.sort().join("\n");
    };
    await fn({
      server,
      base,
      ws,
      dataDir,
      stateDir,
      auditLog,
      policyFile,
      key: secrets[0],
      secrets,
      snapshot,
    });
  } finally {
    await Deno.remove(base, { recursive: true });
  }
}

function assertNoSecret(s: Setting, what: string, text: string): void {
  for (const secret of s.secrets) {
    assert.ok(!text.includes(secret), `${what} answered a secret: ${text.slice(0, 200)}`);
  }
}

Deno.test("withheld: links planted in the root lead no file endpoint to the server's own files", async () => {
  await withSetting(async (s) => {
    const { server, ws } = s;
    await Deno.symlink(s.dataDir, `${ws}/data`);
    await Deno.symlink(s.stateDir, `${ws}/state`);
    await Deno.symlink(`${s.dataDir}/store.key`, `${ws}/key`);
    await Deno.symlink(s.auditLog, `${ws}/audit`);
    await Deno.symlink(s.policyFile, `${ws}/policy`);
    await Deno.symlink(`${ws}/elsewhere`, `${ws}/open`);
    await Deno.writeTextFile(`${ws}/mine.txt`, "mine");
    const before = await s.snapshot();
    const auditBefore = await Deno.readTextFile(s.auditLog);

    const refused: [string, () => Promise<Response>][] = [];
    const ask = (what: string, path: string, init?: RequestInit) =>
      refused.push([what, () => server.fetch(path, init)]);
    for (const p of ["key", "audit", "policy", "data/store.key", "data/agents.sqlite"]) {
      ask(`download ${p}`, `/files?path=ws/${enc(p)}`);
      ask(`stat ${p}`, `/files/stat?path=ws/${enc(p)}`);
    }
    ask("download state/state-canary", `/files?path=ws/state/state-canary`);
    for (const [p, canary] of [["data", "canary"], ["state", "state-canary"]]) {
      ask(`list ${p}`, `/files/list?path=ws/${p}`);
      ask(`stat ${p}`, `/files/stat?path=ws/${p}`);
      ask(`archive ${p}`, `/files/archive?path=ws/${p}`);
      ask(`search ${p}`, "/files/search", json({ path: `ws/${p}`, content: "canary" }));
      ask(`upload ${p}/canary`, `/files?path=ws/${p}/${canary}&overwrite=true`, {
        method: "POST",
        body: "overwritten",
      });
      ask(`upload ${p}/new.txt`, `/files?path=ws/${p}/new.txt`, { method: "POST", body: "new" });
      ask(`mkdir ${p}/made`, "/files/mkdir", json({ path: `ws/${p}/made` }));
      ask(`delete ${p}/canary`, `/files?path=ws/${p}/${canary}`, { method: "DELETE" });
      ask(
        `move out of ${p}`,
        "/files/move",
        json({ source: `ws/${p}/${canary}`, destination: "ws/c" }),
      );
      ask(
        `move into ${p}`,
        "/files/move",
        json({ source: "ws/mine.txt", destination: `ws/${p}/mine.txt` }),
      );
    }
    for (const p of ["key", "audit", "policy"]) {
      ask(`upload over ${p}`, `/files?path=ws/${p}&overwrite=true`, {
        method: "POST",
        body: "overwritten",
      });
    }
    for (const [what, request] of refused) {
      const res = await request().catch((e) => {
        throw new Error(`${what}: ${e}\n${server.stderr().slice(-3000)}`);
      });
      const text = await bodyText(res);
      assertNoSecret(s, what, text);
      // A new entry below a link to a directory is refused before that (under `allow` the
      // walk does not take a link for a directory to create in): 409 or 404, nothing written.
      const expected = /new\.txt|made|move into/.test(what) ? [403, 404, 409] : [403];
      assert.ok(expected.includes(res.status), `${what}: ${res.status} ${text}`);
      assert.ok(
        ["symlink_denied", "path_denied", "file_exists", "conflict", "not_found"].includes(
          JSON.parse(text).code,
        ),
        `${what}: ${text}`,
      );
    }
    // Deleting the link removes the link, never what it points to.
    const del = await server.fetch("/files?path=ws/key", { method: "DELETE" });
    assert.equal(del.status, 200, await del.text());
    assert.equal(await s.snapshot(), before);
    assert.ok((await Deno.readTextFile(s.auditLog)).startsWith(auditBefore));
    assert.equal(
      await Deno.readTextFile(`${s.stateDir}/state-canary`),
      "canary-of-the-state-directory",
    );
    assert.equal(await Deno.readTextFile(`${ws}/mine.txt`), "mine");

    // `allow` still means links go where they point (anywhere else the runtime lets it).
    const open = await server.fetch("/files?path=ws/open/open.txt");
    assert.equal(await open.text(), "not withheld");
  });
});

/** The swapper: ws/d is a real directory of decoys or a link to the data directory; ws/x.txt a decoy or a link to the store key or the audit log. */
const SWAPPER = `
import os, sys, itertools
ws, data, audit = sys.argv[1], sys.argv[2], sys.argv[3]
targets = [os.path.join(data, "store.key"), audit]
def quiet(f, *a):
    try: f(*a)
    except OSError: pass
def flip_file(n):
    tmp = os.path.join(ws, ".decoy")
    with open(tmp, "w") as f: f.write("decoy-%d\\n" % n)
    quiet(os.rename, tmp, os.path.join(ws, "x.txt"))
    quiet(os.unlink, os.path.join(ws, ".link"))
    quiet(os.symlink, targets[n % 2], os.path.join(ws, ".link"))
    quiet(os.rename, os.path.join(ws, ".link"), os.path.join(ws, "x.txt"))
def remove_tree(p):
    for name in os.listdir(p):
        q = os.path.join(p, name)
        if os.path.isdir(q) and not os.path.islink(q): remove_tree(q)
        else: quiet(os.unlink, q)
    quiet(os.rmdir, p)
d = os.path.join(ws, "d")
for n in itertools.count():
    # ws/d: a real directory of decoys named as the data directory's files, for a while ...
    real = os.path.join(ws, ".d-%d" % n)
    quiet(os.mkdir, real)
    for name in ("store.key", "canary"):
        with open(os.path.join(real, name), "w") as f: f.write("decoy-%d\\n" % n)
    quiet(os.unlink, d)
    quiet(os.rename, real, d)
    for i in range(3): flip_file(n * 6 + i)
    # ... then, in place by rename, a link to the data directory, for as long.
    quiet(os.symlink, data, real + "-link")
    quiet(os.rename, d, real + "-old")
    quiet(os.rename, real + "-link", d)
    if os.path.isdir(real + "-old"): remove_tree(real + "-old")
    for i in range(3): flip_file(n * 6 + 3 + i)
`;

Deno.test("withheld: a directory and a file swapped for links to the server's files, 1000+ requests", async () => {
  await withSetting(async (s) => {
    const { server, ws } = s;
    const before = await s.snapshot();
    const child = new Deno.Command("python3", {
      args: ["-c", SWAPPER, ws, s.dataDir, s.auditLog],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const outcomes = new Map<string, number>();
    let requests = 0;
    try {
      for (let i = 0; i < 200; i++) {
        if (await Deno.lstat(`${ws}/d`).then(() => true, () => false)) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      for (let round = 0; round < 100; round++) {
        const ops: [string, Promise<Response>][] = [
          ["download x", server.fetch("/files?path=ws/x.txt")],
          ["download d/store.key", server.fetch("/files?path=ws/d/store.key")],
          ["stat d/store.key", server.fetch("/files/stat?path=ws/d/store.key")],
          ["list d", server.fetch("/files/list?path=ws/d")],
          ["archive d", server.fetch("/files/archive?path=ws/d")],
          [
            "upload d/canary",
            server.fetch("/files?path=ws/d/canary&overwrite=true", { method: "POST", body: "up" }),
          ],
          ["mkdir d/m", server.fetch("/files/mkdir", json({ path: `ws/d/m-${round}` }))],
          [
            "move d/canary out",
            server.fetch(
              "/files/move",
              json({ source: "ws/d/canary", destination: `ws/c-${round}` }),
            ),
          ],
          ["delete d/store.key", server.fetch("/files?path=ws/d/store.key", { method: "DELETE" })],
          ["search d", server.fetch("/files/search", json({ path: "ws/d", content: "a" }))],
        ];
        for (const [what, pending] of ops) {
          const res = await pending;
          // An archive is gzip: look at it inflated.
          const text = what.startsWith("archive") && res.status === 200
            ? await bodyText(new Response(res.body!.pipeThrough(new DecompressionStream("gzip"))))
              .catch(() => "")
            : await bodyText(res);
          requests++;
          assertNoSecret(s, what, text);
          assert.ok([200, 403, 404, 409].includes(res.status), `${what}: ${res.status} ${text}`);
          const key = `${what} ${res.status}`;
          outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
        }
      }
    } finally {
      child.kill("SIGKILL");
      await child.status;
      await child.stderr.cancel();
    }
    assert.ok(requests >= 1000, String(requests));
    assert.equal(await s.snapshot(), before);
    // Moved-out files are decoys, never the data directory's canary.
    for await (const e of Deno.readDir(ws)) {
      if (e.isFile && e.name.startsWith("c-")) {
        assertNoSecret(s, e.name, await Deno.readTextFile(`${ws}/${e.name}`));
      }
    }
    // The race was real: decoys were read and written, links were refused.
    const count = (prefix: string) =>
      [...outcomes].filter(([k]) => k.startsWith(prefix)).reduce((n, [, v]) => n + v, 0);
    const info = JSON.stringify([...outcomes]);
    const onD = (status: number) =>
      [...outcomes].filter(([k]) => / d/.test(k) && k.endsWith(` ${status}`))
        .reduce((n, [, v]) => n + v, 0);
    assert.ok(count("download x 200") > 0, info);
    assert.ok(onD(200) > 0, info);
    assert.ok(onD(403) > 0, info);
  });
});
