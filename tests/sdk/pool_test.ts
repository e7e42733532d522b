/**
 * The warm pool of the local provider against real sandboxes: a claimed sandbox carries nothing
 * of another claim and none of the pool's own tokens; the pool refills after a claim; a request
 * with other options, or a pool made by another package, is never served from it.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { LocalProvider, Sandbox } from "../../sdk/mod.ts";
import { fillPool } from "../../sdk/providers/local/index.ts";
import { PoolDir, poolKey, poolSpec } from "../../sdk/providers/local/pool.ts";
import { eventually } from "../helpers/wait.ts";
import {
  assertNothingLeft,
  everythingReadableInside,
  processesMentioning,
  useSandbarHome,
} from "./sandbox_helpers.ts";

const home = await useSandbarHome();

Deno.test.afterAll(async () => {
  await new LocalProvider({ home }).drainPool();
  await assertNothingLeft(home);
  await Deno.remove(home, { recursive: true });
});

/** Ids waiting in the pools of `home`, by pool directory. */
async function waiting(): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  for (const pool of await PoolDir.all(home)) found.set(pool.key, await pool.ids());
  return found;
}

async function waitingIds(): Promise<string[]> {
  return [...(await waiting()).values()].flat();
}

async function stateOf(id: string) {
  return JSON.parse(await Deno.readTextFile(join(home, "sandboxes", id, "state.json")));
}

/** GET /capabilities of `sandbox` through its gateway with these server and gateway tokens. */
async function capabilities(sandbox: Sandbox, token: string, gateway: string): Promise<number> {
  const res = await fetch(`${sandbox.url}/capabilities`, {
    headers: { "x-sandbar-gateway": gateway, authorization: `Bearer ${token}` },
  });
  await res.body?.cancel();
  return res.status;
}

Deno.test("a claimed sandbox carries nothing of another claim and none of the pool's tokens", async () => {
  const provider = new LocalProvider({ home, pool: 1 });
  const first = await Sandbox.create({ provider, envs: { FIRST_SECRET: "first-value" } });
  await first.files.write("/home/user/first.txt", "first");
  const firstState = await stateOf(first.id);
  const pooled = await eventually("the pool has a sandbox", async () => {
    const ids = await waitingIds();
    return ids.length === 1 ? ids[0] : null;
  }, 60_000);
  const before = await stateOf(pooled);
  assert.ok(before.pool, "a waiting sandbox is marked as pooled");
  assert.ok(!(await Sandbox.list({ provider })).some((s) => s.sandboxId === pooled));

  const second = await Sandbox.create({
    provider,
    envs: { SECOND: "second-value" },
    metadata: { who: "second" },
    timeout: 90,
  });
  try {
    assert.equal(second.id, pooled, "the waiting sandbox was handed out");
    assert.deepEqual(await second.commands.list(), [], "no process of the pool's warm-up");
    const r = await second.commands.run('echo "[$FIRST_SECRET][$SECOND]"; ls /home/user');
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(r.stdout, "[][second-value]\n");
    const after = await stateOf(second.id);
    assert.equal(after.pool, undefined);
    for (const field of ["serverToken", "accessToken", "gatewayToken"]) {
      assert.notEqual(after[field], before[field], `${field} was minted at the claim`);
      assert.notEqual(after[field], firstState[field], `${field} is not the first sandbox's`);
    }
    assert.equal(await capabilities(second, after.serverToken, after.gatewayToken), 200);
    const { serverToken: oldServer, gatewayToken: oldGateway } = before;
    assert.equal(await capabilities(second, oldServer, after.gatewayToken), 401, "pool's token");
    assert.equal(await capabilities(second, after.serverToken, oldGateway), 401, "pool's gateway");
    const info = await second.refreshInfo();
    assert.deepEqual(info.metadata, { who: "second" });
    const lifetime = info.endAt!.getTime() - Date.now();
    assert.ok(lifetime > 60_000 && lifetime <= 90_000, `lifetime ${lifetime} ms`);
  } finally {
    await second.kill();
    await first.kill();
  }
});

Deno.test("the pool refills after a claim; other options and other packages are not served", async () => {
  const provider = new LocalProvider({ home, pool: 1 });
  await provider.drainPool();
  await (await Sandbox.create({ provider })).kill();
  const key = [...(await waiting()).keys()][0];
  await eventually("the pool has a sandbox", async () => (await waitingIds()).length === 1, 60_000);

  // A pool of the same options made by another package (as an older program would leave it).
  await provider.drainPool();
  const [options] = key.split("-");
  const staleKey = `${options}-${"0".repeat(24)}`;
  const stale = new PoolDir(home, staleKey);
  await stale.writeSpec(poolSpec({ ...BASE }, "bwrap"));
  assert.equal(await fillPool(home, staleKey, 1), 1);
  const [staleId] = await stale.ids();
  assert.equal((await stateOf(staleId)).pool.key, staleKey);

  // This package's request: not served the stale one; its filler removes the stale pool.
  const cold = await Sandbox.create({ provider });
  assert.notEqual(cold.id, staleId);
  await cold.kill();
  const pooled = await eventually("the pool refills", async () => {
    const ids = (await waiting()).get(key) ?? [];
    return ids.length === 1 ? ids[0] : null;
  }, 60_000);
  await eventually("the stale pool is gone", async () => !(await waiting()).has(staleKey), 30_000);
  await eventually(
    "the stale pool's sandbox is gone",
    () => processesMentioning(join(home, "sandboxes", staleId)).length === 0,
    10_000,
  );

  // Other options (here `secure`): a sandbox of its own; the waiting one stays.
  const other = await Sandbox.create({ provider, secure: false });
  assert.notEqual(other.id, pooled);
  assert.ok((await waitingIds()).includes(pooled));
  await other.kill();

  const claimed = await Sandbox.create({ provider });
  assert.equal(claimed.id, pooled, "the matching waiting sandbox");
  await claimed.kill();
  const refilled = await eventually("the pool refills again", async () => {
    const ids = (await waiting()).get(key) ?? [];
    return ids.length === 1 ? ids[0] : null;
  }, 60_000);
  assert.notEqual(refilled, pooled, "a claimed sandbox never returns to the pool");
});

const BASE = { template: "base", timeout: 60, metadata: {}, envs: {}, secure: true };

Deno.test("a claimed sandbox's tokens cannot be found from inside it, its server's stdin included", async () => {
  const provider = new LocalProvider({ home, pool: 1 });
  await provider.drainPool();
  await (await Sandbox.create({ provider })).kill();
  const pooled = await eventually("the pool has a sandbox", async () => {
    const ids = await waitingIds();
    return ids.length === 1 ? ids[0] : null;
  }, 60_000);
  const sandbox = await Sandbox.create({ provider });
  assert.equal(sandbox.id, pooled);
  try {
    const state = await stateOf(sandbox.id);
    const tokens: string[] = [state.serverToken, state.accessToken, state.gatewayToken];
    const readable = await everythingReadableInside(sandbox);
    for (const token of tokens) assert.ok(!readable.includes(token), "a token was found");
    // The claim came through the server's stdin: its descriptors are closed to the sandbox.
    const stdin = await sandbox.commands.run(
      "for p in $(pgrep -f 'main[.]ts .*--await-claim'); do echo server; " +
        "(exec 3</proc/$p/fd/0) 2>/dev/null && echo readable || echo closed; done",
    );
    assert.equal(stdin.stdout, "server\nclosed\n", stdin.stderr);
  } finally {
    await sandbox.kill();
  }
});

Deno.test("requests that differ only in what a claim applies share a pool key", async () => {
  const base = BASE;
  const a = await poolKey({ ...base, envs: { A: "1" }, metadata: { m: "x" }, timeout: 5 }, "bwrap");
  const b = await poolKey(base, "bwrap");
  assert.equal(a, b);
  assert.notEqual(await poolKey({ ...base, secure: false }, "bwrap"), b);
  assert.notEqual(await poolKey({ ...base, policy: "readonly" }, "bwrap"), b);
  assert.notEqual(await poolKey(base, "none"), b);
  assert.equal(await poolKey({ ...base, commandsFile: "/x.ts" }, "bwrap"), null);
  assert.deepEqual(poolSpec({ ...base, envs: { A: "1" } }, "bwrap").request.envs, {});
});
