/**
 * Paths held by the kernel for every process: a shell string is never checked for the paths it
 * touches, so `paths.allow`, `read_only` and literal `deny` paths must hold in the kernel. Judged
 * by the files left behind and what the shell could print.
 */

import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";
import { exists } from "../helpers/fs.ts";

Deno.test("processes write only under paths.allow, never under read_only, never read deny", async () => {
  const outside = await Deno.makeTempDir({ prefix: "sandbar-paths-outside-" });
  const root = await Deno.makeTempDir({ prefix: "sandbar-paths-root-" });
  try {
    await Deno.mkdir(`${root}/ref/deep`, { recursive: true });
    await Deno.writeTextFile(`${root}/ref/deep/kept.txt`, "original\n");
    await Deno.mkdir(`${root}/private`);
    await Deno.mkdir(`${root}/work`);
    await Deno.writeTextFile(`${root}/private/secret.txt`, "private-secret\n");
    await Deno.writeTextFile(`${outside}/outside.txt`, "outside-secret\n");
    await using server = await startTestServer({
      root,
      policy: { paths: { read_only: [`${root}/ref`], deny: [`${root}/private`] } },
    });
    const res = await server.fetch("/process/shell", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        cmd: [
          "echo changed > ref/deep/kept.txt",
          "rm -f ref/deep/kept.txt",
          "touch ref/deep/new.txt",
          `touch ${outside}/new.txt`,
          `cat ${outside}/outside.txt private/secret.txt`,
          "cat ref/deep/kept.txt",
          "echo ok > work/work.txt",
          "echo top > top.txt",
        ].join("; "),
      }),
    });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(Deno.readTextFileSync(`${root}/ref/deep/kept.txt`), "original\n");
    assert.equal(exists(`${root}/ref/deep/new.txt`), false);
    assert.equal(exists(`${outside}/new.txt`), false);
    assert.ok(!body.stdout.includes("secret"), body.stdout);
    // Reading a read_only file and writing elsewhere in the root still work; a new file directly
    // in the root, which holds the read_only and denied trees, cannot be made (Landlock grants a
    // right on a whole tree, so that directory is granted entry by entry).
    assert.equal(body.stdout, "original\n");
    assert.equal(Deno.readTextFileSync(`${root}/work/work.txt`), "ok\n");
    assert.equal(exists(`${root}/top.txt`), false);
  } finally {
    await Deno.remove(outside, { recursive: true });
    await Deno.remove(root, { recursive: true });
  }
});
