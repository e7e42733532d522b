// A server on abstract sockets (`--abstract-sockets`, a sandbox's) whose listener fails: the
// record the relays read (`shared/listen_targets.ts`) marks that port down before the server
// listens again, and then names a new socket, never the old one again. Between the two, the old
// name is free: any process inside could bind it, and a relay that dialled it would hand that
// process a client's request and token. The failure is made as a user's load would make it:
// more connections than the server has descriptors (`ulimit -n 256`), so that Deno.serve's
// accept loop ends with EMFILE.
import assert from "node:assert/strict";
import { join } from "node:path";
import { landlockAbi } from "../../server/confine/landlock.ts";
import { LISTEN_TARGETS_FILE } from "../../shared/listen_targets.ts";
import { closeAll, startServerWithFewDescriptors } from "../helpers/server.ts";

/**
 * The record's entry for 9000, or undefined while there is none to read (the server rewrites
 * the file in place: a read may fall between its truncation and its write).
 */
function entry9000(text: string): string | null | undefined {
  try {
    return (JSON.parse(text) as Record<string, string | null>)["9000"];
  } catch {
    return undefined;
  }
}

/** The record's text, or "" while there is none. */
function recordText(file: string): string {
  try {
    return Deno.readTextFileSync(file);
  } catch {
    return "";
  }
}

Deno.test({
  name: "abstract sockets: a failed listener is marked down for the relays, then a new name",
  // Without Landlock ABI 6 (scoped abstract sockets) the server listens on TCP instead.
  ignore: landlockAbi() < 6,
  fn: async () => {
    const root = await Deno.makeTempDir({ prefix: "sandbar-test-abstract-emfile-" });
    const stateDir = await Deno.makeTempDir({ prefix: "sandbar-test-abstract-state-" });
    const file = join(stateDir, LISTEN_TARGETS_FILE);
    await using server = await startServerWithFewDescriptors(
      ["--abstract-sockets", "--root", root],
      { SVC_SERVER_TOKEN: "abstract-token-0123456789abcdef", SANDBAR_STATE_DIR: stateDir },
    );
    const conns: Deno.Conn[] = [];
    try {
      assert.match(server.url, /^http\+unix:\/\/%40sandbar-/);
      const old = entry9000(recordText(file));
      assert.ok(old, "no record of the sockets");
      assert.match(old, /^\0sandbar-[0-9a-f]{32}-9000$/);
      // Watch the record while the listener fails and comes back.
      const seen: string[] = [];
      let watching = true;
      const watcher = (async () => {
        while (watching) {
          const text = recordText(file);
          if (text && seen.at(-1) !== text) seen.push(text);
          await new Promise((r) => setTimeout(r, 5));
        }
      })();
      for (let i = 0; i < 400; i++) {
        try {
          conns.push(await Deno.connect({ transport: "unix", path: old }));
        } catch {
          break; // refused: the listener is down at this moment
        }
      }
      assert.ok(conns.length > 200, `only ${conns.length} connections opened`);
      // Behind the host's gateway a connection carries one request and ends: these end too.
      closeAll(conns);
      // It comes back on a new name, which answers.
      const deadline = Date.now() + 30_000;
      let now: string | null | undefined = old;
      while (now === old || now === null || now === undefined) {
        assert.ok(Date.now() < deadline, "the server stayed deaf after running out of descriptors");
        await new Promise((r) => setTimeout(r, 50));
        now = entry9000(recordText(file));
      }
      assert.match(now ?? "", /^\0sandbar-[0-9a-f]{32}-9000$/);
      const conn = await Deno.connect({ transport: "unix", path: now! });
      await conn.write(
        new TextEncoder().encode("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
      );
      const answer = await new Response(conn.readable).text();
      assert.match(answer, /^HTTP\/1\.1 200/);
      watching = false;
      await watcher;
      // In between, the record said the port was down; the old name never came back.
      const values = seen.map(entry9000).filter((v) => v !== undefined);
      assert.ok(
        values.includes(null),
        `the record never marked 9000 down: ${values.length} states`,
      );
      assert.equal(values.lastIndexOf(old), 0, "the old name was recorded again after it failed");
    } finally {
      closeAll(conns);
      await Deno.remove(root, { recursive: true });
      await Deno.remove(stateDir, { recursive: true });
    }
  },
});
