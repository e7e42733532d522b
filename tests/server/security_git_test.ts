/**
 * The git endpoints against hostile repositories: configuration that makes git run a program
 * (lazy fetch from a promisor remote, fsmonitor, credential helpers, hooks, includes), a
 * `commondir` outside the allowed paths, and `GIT_*` variables set through `POST /system/env`.
 * Each attack tries to create a marker file or to read another repository; success is judged by
 * that side effect.
 */

import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";
import { exists } from "../helpers/fs.ts";

async function git(cwd: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", {
    args,
    cwd,
    env: { GIT_CONFIG_NOSYSTEM: "1", HOME: cwd },
  }).output();
  if (out.code !== 0) throw new Error(new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout);
}

async function repository(path: string): Promise<void> {
  await Deno.mkdir(path, { recursive: true });
  await git(path, "init", "-q", "-b", "main");
  await Deno.writeTextFile(`${path}/x`, "hello\n");
  await git(path, "add", ".");
  await git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init");
  await Deno.writeTextFile(`${path}/x`, "changed\n");
}

/** Configuration that would run `cmd`, each as `git config` arguments. */
function hostile(cmd: string): Record<string, string[][]> {
  return {
    "lazy fetch through uploadpack": [
      ["core.repositoryformatversion", "1"],
      ["extensions.partialClone", "origin"],
      ["remote.origin.url", "/nonexistent"],
      ["remote.origin.promisor", "true"],
      ["remote.origin.uploadpack", `${cmd} #`],
    ],
    "fsmonitor": [["core.fsmonitor", `${cmd}; false`]],
    "credential helper": [["credential.helper", `!${cmd}`]],
    "hooks path": [["core.hooksPath", "/tmp"]],
    "ssh command": [["core.sshCommand", cmd]],
    "alternate refs command": [["core.alternateRefsCommand", cmd]],
    "include of another file": [["include.path", "/etc/gitconfig"]],
  };
}

Deno.test("a repository configured to run a program is refused, and runs nothing", async () => {
  await using server = await startTestServer();
  const marker = `${server.root}/PWNED`;
  for (const [name, settings] of Object.entries(hostile(`touch ${marker}`))) {
    const repo = `${server.root}/${name.replaceAll(" ", "-")}`;
    await repository(repo);
    for (const [k, v] of settings) await git(repo, "config", k, v);
    const rel = repo.slice(server.root.length + 1);
    for (
      const q of [
        `/git/status?path=${rel}`,
        `/git/diff?path=${rel}`,
        `/git/diff?path=${rel}&ref=0123456789abcdef0123456789abcdef01234567`,
      ]
    ) {
      const res = await server.fetch(q);
      const body = await res.json();
      assert.deepEqual([res.status, body.code], [403, "process_denied"], `${name} ${q}`);
    }
    assert.equal(exists(marker), false, name);
  }
});

Deno.test("a commondir outside the allowed paths shows nothing of the other repository", async () => {
  const other = await Deno.makeTempDir({ prefix: "sandbar-git-other-" });
  try {
    await repository(other);
    await Deno.writeTextFile(`${other}/secret-name.txt`, "s\n");
    await git(other, "add", "secret-name.txt");
    await using server = await startTestServer();
    const repo = `${server.root}/linked`;
    await repository(repo);
    await Deno.writeTextFile(`${repo}/.git/commondir`, `${other}/.git\n`);
    const res = await server.fetch(`/git/status?path=linked`);
    const text = await res.text();
    assert.equal(res.status, 403, text);
    assert.ok(!text.includes("secret-name"), text);
    const diff = await server.fetch(`/git/diff?path=linked&ref=HEAD`);
    const diffText = await diff.text();
    assert.equal(diff.status, 403, diffText);
    assert.ok(!diffText.includes("secret-name"), diffText);
  } finally {
    await Deno.remove(other, { recursive: true });
  }
});

Deno.test("GIT_* variables set through /system/env reach no git the server runs", async () => {
  const outside = await Deno.makeTempDir({ prefix: "sandbar-git-trace-" });
  try {
    await using server = await startTestServer();
    await repository(`${server.root}/repo`);
    const set = await server.fetch("/system/env", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        env: {
          GIT_TRACE: `${outside}/trace`,
          GIT_TRACE_PACKET: `${server.root}/trace-packet`,
          GIT_CONFIG_COUNT: "1",
          GIT_CONFIG_KEY_0: "core.fsmonitor",
          GIT_CONFIG_VALUE_0: `touch ${server.root}/PWNED`,
        },
      }),
    });
    assert.equal(set.status, 200, await set.text());
    const res = await server.fetch(`/git/status?path=repo`);
    assert.equal(res.status, 200, await res.text());
    const diff = await server.fetch(`/git/diff?path=repo`);
    assert.equal(diff.status, 200);
    assert.ok((await diff.json()).diff.includes("+changed"));
    assert.equal(exists(`${outside}/trace`), false);
    assert.equal(exists(`${server.root}/trace-packet`), false);
    assert.equal(exists(`${server.root}/PWNED`), false);
  } finally {
    await Deno.remove(outside, { recursive: true });
  }
});
