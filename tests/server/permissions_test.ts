// Deno permissions as defense in depth: a named command that bypasses every guard on purpose
// is still refused by the runtime, because the launcher narrowed the server's permissions.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { startTestServer } from "../helpers/server.ts";

const COMMANDS = fileURLToPath(new URL("./fixtures/commands.ts", import.meta.url));

Deno.test("a guard bypass is refused by Deno's permissions", async () => {
  const outside = await Deno.makeTempDir({ prefix: "sandbar-outside-" });
  try {
    await Deno.writeTextFile(`${outside}/secret.txt`, "top secret");
    await using server = await startTestServer({ commandsFile: COMMANDS });
    const read = await server.fetch("/commands/read_anywhere", {
      method: "POST",
      body: JSON.stringify({ path: `${outside}/secret.txt` }),
    });
    assert.equal(read.status, 500);
    const body = await read.json();
    assert.match(body.error, /Requires read access/);
    assert.ok(!JSON.stringify(body).includes("top secret"));
    const write = await server.fetch("/commands/write_anywhere", {
      method: "POST",
      body: JSON.stringify({ path: `${outside}/planted.txt` }),
    });
    assert.equal(write.status, 500);
    assert.match((await write.json()).error, /Requires write access/);
    await assert.rejects(Deno.stat(`${outside}/planted.txt`), Deno.errors.NotFound);
    // Inside the allowed root the same command works: the refusal is the permission, not a bug.
    await Deno.writeTextFile(`${server.root}/inside.txt`, "fine");
    const inside = await server.fetch("/commands/read_anywhere", {
      method: "POST",
      body: JSON.stringify({ path: `${server.root}/inside.txt` }),
    });
    assert.equal(await inside.json(), "fine");
  } finally {
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("read-only trees are write-protected by Deno too", async () => {
  const root = await Deno.makeTempDir({ prefix: "sandbar-ro-" });
  try {
    await Deno.mkdir(`${root}/ref`);
    await using server = await startTestServer({
      root,
      commandsFile: COMMANDS,
      policy: { paths: { read_only: ["ref"] } },
    });
    const write = await server.fetch("/commands/write_anywhere", {
      method: "POST",
      body: JSON.stringify({ path: `${root}/ref/x.txt` }),
    });
    assert.equal(write.status, 500);
    assert.match((await write.json()).error, /Requires write access/);
    await assert.rejects(Deno.stat(`${root}/ref/x.txt`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
