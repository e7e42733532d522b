/**
 * No check-then-use on a path a session's processes can change: while a swapper replaces a file
 * of the workspace with a link to the store key (or to `agents.sqlite`, or to a `paths.deny`
 * file), and a directory with a link to the data directory, in a tight loop, at least a thousand
 * operations of each descriptor-based path run: artifact publishing at a turn's end, `apply_patch`
 * reading (and moving, and deleting) files, and environment file uploads writing into the
 * workspace. Judged by the side effect: no artifact, moved file or data-directory file ever holds
 * the secrets, and nothing in the data directory is written or removed. Each loop also counts what
 * did go through (decoys published, files moved), so a test that reads nothing cannot pass.
 */

import assert from "node:assert/strict";
import { runtimeSetup } from "./runtime_helpers.ts";

/** The swapper: a python loop, a process of the test, as fast as the kernel lets it. */
const SWAPPER = `
import os, sys, itertools, time
out, data, secret = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(out, exist_ok=True)
targets = [os.path.join(data, "store.key"), os.path.join(data, "agents.sqlite"), secret]
def quiet(f, *a):
    try: f(*a)
    except OSError: pass
for n in itertools.count():
    # outputs/x.txt: a regular decoy, then a link to a secret, in place by rename.
    tmp = os.path.join(out, ".decoy")
    with open(tmp, "w") as f: f.write("decoy-%d\\n" % n)
    quiet(os.rename, tmp, os.path.join(out, "x.txt"))
    # A moment as a decoy: the rest of the loop keeps x.txt a link, and with no pause a patch found
    # a decoy 2 to 4 times in 500 (once none at all, so the loop proved nothing).
    time.sleep(0.0003)
    quiet(os.unlink, os.path.join(out, ".link"))
    quiet(os.symlink, targets[n % 3], os.path.join(out, ".link"))
    quiet(os.rename, os.path.join(out, ".link"), os.path.join(out, "x.txt"))
    # outputs/d: a real directory with decoys named as the data directory's files, then a link
    # to the data directory itself.
    d = os.path.join(out, "d")
    quiet(os.unlink, d)
    real = os.path.join(out, ".d-%d" % n)
    quiet(os.mkdir, real)
    for name in ("store.key", "agents.sqlite", "canary"):
        with open(os.path.join(real, name), "w") as f: f.write("decoy-%d\\n" % n)
    quiet(os.rename, real, d)
    quiet(os.rename, d, real + "-old")
    quiet(os.symlink, data, d)
    for name in ("store.key", "agents.sqlite", "canary"):
        quiet(os.unlink, os.path.join(real + "-old", name))
    quiet(os.rmdir, real + "-old")
`;

interface Secrets {
  key: Uint8Array;
  secret: Uint8Array;
}

/** Whether `bytes` holds any secret: the key, the denied file, or a SQLite database. */
function leaks(bytes: Uint8Array, s: Secrets): boolean {
  const text = new TextDecoder("latin1").decode(bytes);
  const has = (needle: Uint8Array) =>
    needle.length > 0 && text.includes(new TextDecoder("latin1").decode(needle));
  return has(s.key) || has(s.secret) || text.startsWith("SQLite format 3");
}

async function withSwapper<T>(
  outputs: string,
  dataDir: string,
  secretPath: string,
  run: () => Promise<T>,
): Promise<T> {
  const child = new Deno.Command("python3", {
    args: ["-c", SWAPPER, outputs, dataDir, secretPath],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  try {
    // It has swapped at least once before the first operation.
    for (let i = 0; i < 200; i++) {
      try {
        await Deno.lstat(`${outputs}/d`);
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 10));
      }
    }
    return await run();
  } finally {
    child.kill("SIGKILL");
    await child.status;
    await child.stderr.cancel();
  }
}

async function setting(symlinks?: "allow") {
  const root = await Deno.makeTempDir({ prefix: "sandbar-swap-" });
  const secretPath = `${root}/denied-secret.txt`;
  await Deno.writeTextFile(secretPath, "denied-secret-9f3a7c");
  const t = await runtimeSetup({
    root,
    policy: {
      endpoints: { agents: true },
      paths: { deny: [secretPath], ...(symlinks ? { symlinks } : {}) },
    },
  });
  const { sessionId, environmentId, workspace } = await t.session();
  const dataDir = t.server.dataDir;
  await Deno.writeTextFile(`${dataDir}/canary`, "canary-of-the-data-directory");
  const secrets: Secrets = {
    key: await Deno.readFile(`${dataDir}/store.key`),
    secret: await Deno.readFile(secretPath),
  };
  const snapshot = async () => {
    const out = new Map<string, string>();
    // The database changes as it is used; replaced, it would be another inode.
    out.set("agents.sqlite inode", String((await Deno.stat(`${dataDir}/agents.sqlite`)).ino));
    for await (const e of Deno.readDir(dataDir)) {
      if (e.isFile && !e.name.startsWith("agents.sqlite")) {
        out.set(e.name, new TextDecoder().decode(await Deno.readFile(`${dataDir}/${e.name}`)));
      }
    }
    return out;
  };
  return {
    t,
    root,
    sessionId,
    environmentId,
    workspace,
    dataDir,
    secretPath,
    secrets,
    snapshot,
    async [Symbol.asyncDispose]() {
      await t[Symbol.asyncDispose]();
      await Deno.remove(root, { recursive: true }).catch(() => {});
    },
  };
}

Deno.test("descriptors: artifact publishing over 1000 turns against a swap loop never publishes a secret", async () => {
  await using s = await setting();
  const { t, sessionId, workspace } = s;
  const before = await s.snapshot();
  const TURNS = 1000;
  await withSwapper(`${workspace}/outputs`, s.dataDir, s.secretPath, async () => {
    for (let i = 0; i < TURNS; i++) {
      t.upstream.script.push({ output: [{ type: "message", text: "ok" }] });
      const r = await t.client.beta.agents.sessions.stream(sessionId, { input: `turn ${i}` })
        .finalResult();
      assert.equal(r.turn.status, "completed");
    }
  });
  let decoys = 0;
  for await (const a of t.client.beta.agents.sessions.artifacts.list(sessionId, { limit: 100 })) {
    const res = await t.server.fetch(
      `/v1/agents/sessions/${sessionId}/artifacts/${a.id}/content`,
    );
    const bytes = new Uint8Array(await res.arrayBuffer());
    assert.equal(leaks(bytes, s.secrets), false, `artifact ${a.path} holds a secret`);
    if (new TextDecoder().decode(bytes).startsWith("decoy-")) decoys++;
  }
  assert.ok(decoys > 0, "nothing was published: the loop proved nothing");
  assert.deepEqual(await s.snapshot(), before, "the data directory changed");
});

// Also under `paths.symlinks: "allow"`: the runtime's own file operations follow no link even
// then, or a directory swapped for a link to the data directory would be followed.
for (const symlinks of [undefined, "allow" as const]) {
  const under = symlinks ? ` (paths.symlinks: ${symlinks})` : "";
  Deno.test(`descriptors: 1000 apply_patch reads, moves and deletes against a swap loop never read or remove a secret${under}`, async () => {
    await using s = await setting(symlinks);
    const { t, sessionId, workspace } = s;
    const before = await s.snapshot();
    const PER_TURN = 20;
    const TURNS = 50;
    await Deno.mkdir(`${workspace}/copies`);
    await withSwapper(`${workspace}/outputs`, s.dataDir, s.secretPath, async () => {
      for (let turn = 0; turn < TURNS; turn++) {
        const calls = [];
        for (let i = 0; i < PER_TURN; i++) {
          const n = turn * PER_TURN + i;
          const input = i % 2 === 0
            // Read outputs/x.txt (a decoy or a link) and move it, unchanged, to copies/.
            ? `*** Begin Patch\n*** Update File: outputs/x.txt\n*** Move to: copies/c-${n}.txt\n*** End Patch`
            // Read and delete outputs/d/canary (a decoy, or the data directory's through a link).
            : "*** Begin Patch\n*** Delete File: outputs/d/canary\n*** End Patch";
          calls.push({ type: "function_call" as const, name: "apply_patch", arguments: { input } });
        }
        t.upstream.script.push({ output: calls }, { output: [{ type: "message", text: "ok" }] });
        await t.client.beta.agents.sessions.stream(sessionId, { input: `turn ${turn}` })
          .finalResult();
      }
    });
    let moved = 0;
    for await (const e of Deno.readDir(`${workspace}/copies`)) {
      const bytes = await Deno.readFile(`${workspace}/copies/${e.name}`);
      assert.equal(leaks(bytes, s.secrets), false, `${e.name} holds a secret`);
      moved++;
    }
    assert.ok(moved > 0, "no patch went through: the loop proved nothing");
    assert.deepEqual(await s.snapshot(), before, "the data directory changed");
  });

  Deno.test(`descriptors: 1000 environment file uploads against a swap loop never write into the data directory${under}`, async () => {
    await using s = await setting(symlinks);
    const { t, environmentId, workspace } = s;
    const before = await s.snapshot();
    let written = 0;
    await withSwapper(`${workspace}/outputs`, s.dataDir, s.secretPath, async () => {
      for (let i = 0; i < 1000; i++) {
        const name = ["store.key", "canary", "agents.sqlite"][i % 3];
        const res = await t.server.post(`/v1/agents/environments/${environmentId}/files`, {
          type: "inline",
          path: `/workspace/outputs/d/${name}`,
          data: btoa(`planted-${i}`),
        });
        const text = await res.text();
        if (res.status === 200) written++;
        else assert.ok([400, 403, 409].includes(res.status), `answered ${res.status}: ${text}`);
      }
    });
    assert.ok(written > 0, "no upload went through: the loop proved nothing");
    assert.deepEqual(await s.snapshot(), before, "the data directory changed");
    // The store still opens with its key: nothing was overwritten.
    assert.equal((await t.client.beta.agents.vaults.create({ name: "still" })).name, "still");
  });
}
