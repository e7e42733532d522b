import assert from "node:assert/strict";
import OpenAI from "openai";
import { rejection, startAgentsServer } from "./helpers.ts";

const SECRET = "sk-known-secret-7f3a9c1e5b2d4f60";
const ROTATED = "sk-rotated-secret-0d8e6a4c2b1f9e73";

Deno.test("vaults: create, retrieve, update, list with metadata and status filters, delete", async () => {
  await using server = await startAgentsServer();
  const { client } = server;
  const vaults = client.beta.agents.vaults;
  const ids: string[] = [];
  for (let i = 0; i < 7; i++) {
    const v = await vaults.create({ name: `v${i}`, metadata: { team: i % 2 ? "odd" : "even" } });
    assert.match(v.id, /^vault_/);
    assert.equal(v.object, "vault");
    ids.push(v.id);
  }
  assert.deepEqual(await vaults.retrieve(ids[0]), {
    id: ids[0],
    object: "vault",
    created_at: (await vaults.retrieve(ids[0])).created_at,
    metadata: { team: "even" },
    name: "v0",
  });
  const renamed = await vaults.update(ids[0], { name: "renamed" });
  assert.equal(renamed.name, "renamed");
  assert.deepEqual(renamed.metadata, { team: "even" }, "metadata unchanged when omitted");

  const desc: string[] = [];
  for await (const v of vaults.list({ limit: 2 })) desc.push(v.id);
  assert.deepEqual(desc, [...ids].reverse());
  const asc: string[] = [];
  for await (const v of vaults.list({ limit: 3, order: "asc" })) asc.push(v.id);
  assert.deepEqual(asc, ids);

  // metadata[team]=odd, sent by the client as metadata%5Bteam%5D=odd.
  const odd: string[] = [];
  for await (const v of vaults.list({ limit: 2, metadata: { team: "odd" } } as never)) {
    odd.push((v as { id: string }).id);
  }
  assert.deepEqual(odd, [ids[5], ids[3], ids[1]]);
  const active = await vaults.list({ status: ["active", "archived"] } as never);
  assert.equal(active.data.length, 7);
  const archived = await vaults.list({ status: ["archived"] } as never);
  assert.deepEqual(archived.data, []);
  const badStatus = await rejection(() => vaults.list({ status: ["gone"] } as never));
  assert.equal(badStatus.param, "status");

  assert.deepEqual(await vaults.delete(ids[1]), {
    id: ids[1],
    deleted: true,
    object: "vault.deleted",
  });
  assert.ok(await rejection(() => vaults.retrieve(ids[1])) instanceof OpenAI.NotFoundError);
  const longName = await rejection(() => vaults.create({ name: "x".repeat(257) }));
  assert.equal(longName.param, "name");
});

Deno.test("credentials: secrets are never returned, rotation replaces them, all CRUD and 404s", async () => {
  await using server = await startAgentsServer();
  const { client } = server;
  const vault = await client.beta.agents.vaults.create({ name: "keys" });
  const creds = client.beta.agents.vaults.credentials;
  const bearer = await creds.create(vault.id, {
    name: "github",
    auth: { type: "static_bearer", token: SECRET, mcp_server_url: "https://mcp.example/mcp" },
  });
  assert.match(bearer.id, /^cred_/);
  assert.equal(bearer.object, "vault.credential");
  assert.equal(bearer.vault_id, vault.id);
  assert.deepEqual(bearer.auth, {
    type: "static_bearer",
    mcp_server_url: "https://mcp.example/mcp",
  });
  assert.ok(!JSON.stringify(bearer).includes(SECRET));

  const env = await creds.create(vault.id, {
    name: "openai",
    metadata: { kind: "llm" },
    auth: {
      type: "environment_variable",
      secret_name: "OPENAI_API_KEY",
      secret_value: SECRET,
      networking: { type: "limited", allowed_hosts: ["api.openai.com"] },
    },
  });
  assert.deepEqual(env.auth, {
    type: "environment_variable",
    secret_name: "OPENAI_API_KEY",
    networking: { type: "limited", allowed_hosts: ["api.openai.com"] },
  });
  const oauth = await creds.create(vault.id, {
    name: "oauth",
    auth: {
      type: "mcp_oauth",
      access_token: SECRET,
      mcp_server_url: "https://mcp.example/mcp",
      refresh: {
        client_id: "client",
        refresh_token: SECRET,
        token_endpoint: "https://auth.example/token",
        token_endpoint_auth: { type: "client_secret_post", client_secret: SECRET },
      },
    },
  });
  assert.deepEqual(oauth.auth, {
    type: "mcp_oauth",
    expires_at: null,
    mcp_server_url: "https://mcp.example/mcp",
    refresh: {
      client_id: "client",
      resource: null,
      scope: null,
      token_endpoint: "https://auth.example/token",
      token_endpoint_auth: { type: "client_secret_post" },
    },
  });

  const listed: string[] = [];
  for await (const c of creds.list(vault.id, { limit: 1 })) listed.push(c.id);
  assert.deepEqual(listed, [oauth.id, env.id, bearer.id]);
  const llm = await creds.list(vault.id, { metadata: { kind: "llm" } } as never);
  assert.deepEqual(llm.data.map((c) => c.id), [env.id]);

  const rotated = await creds.update(bearer.id, {
    vault_id: vault.id,
    auth: { type: "static_bearer", token: ROTATED },
  });
  assert.equal(rotated.id, bearer.id);
  assert.ok(rotated.updated_at >= bearer.updated_at);
  const wrongType = await rejection(() =>
    creds.update(bearer.id, {
      vault_id: vault.id,
      auth: { type: "environment_variable", secret_value: ROTATED },
    })
  );
  assert.equal(wrongType.param, "auth.type");
  const retrieved = await creds.retrieve(bearer.id, { vault_id: vault.id });
  assert.deepEqual(retrieved.auth, bearer.auth);

  // Everything the API answered so far, as text: no secret anywhere.
  const everything = JSON.stringify([
    bearer,
    env,
    oauth,
    rotated,
    retrieved,
    (await creds.list(vault.id)).data,
  ]);
  assert.ok(!everything.includes(SECRET) && !everything.includes(ROTATED));

  // An error about a body carrying a secret does not repeat it.
  const res = await server.fetch(`/v1/vaults/${vault.id}/credentials`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      name: "x",
      auth: { type: "static_bearer", token: SECRET, mcp_server_url: "not a url" },
    }),
  });
  assert.equal(res.status, 400);
  const text = await res.text();
  assert.ok(!text.includes(SECRET), text);
  assert.equal(JSON.parse(text).error.param, "auth.mcp_server_url");

  const missing = await rejection(() => creds.retrieve("cred_nope", { vault_id: vault.id }));
  assert.ok(missing instanceof OpenAI.NotFoundError);
  assert.equal(missing.param, "credential_id");
  const otherVault = await client.beta.agents.vaults.create({});
  const elsewhere = await rejection(() => creds.retrieve(bearer.id, { vault_id: otherVault.id }));
  assert.ok(elsewhere instanceof OpenAI.NotFoundError, "a credential belongs to its vault");
  const noVault = await rejection(() => creds.list("vault_nope"));
  assert.equal(noVault.param, "vault_id");

  assert.deepEqual(await creds.delete(env.id, { vault_id: vault.id }), {
    id: env.id,
    deleted: true,
    object: "vault.credential.deleted",
  });
  await client.beta.agents.vaults.delete(vault.id);
  const gone = await rejection(() => creds.retrieve(oauth.id, { vault_id: vault.id }));
  assert.ok(gone instanceof OpenAI.NotFoundError, "deleting a vault deletes its credentials");
});

Deno.test("credentials: a known secret is in neither the database files nor the audit log", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sandbar-test-audit-" });
  const audit = `${dir}/audit.jsonl`;
  try {
    const server = await startAgentsServer({
      policy: { endpoints: { agents: true }, audit: "all" },
      args: ["--audit-log", audit],
      dataDir: `${dir}/data`,
    });
    const { client } = server;
    const vault = await client.beta.agents.vaults.create({ name: "keys" });
    const cred = await client.beta.agents.vaults.credentials.create(vault.id, {
      name: "k",
      auth: { type: "static_bearer", token: SECRET, mcp_server_url: "https://mcp.example/" },
    });
    await client.beta.agents.vaults.credentials.update(cred.id, {
      vault_id: vault.id,
      auth: { type: "static_bearer", token: ROTATED },
    });
    await rejection(() =>
      client.beta.agents.vaults.credentials.create(vault.id, {
        name: "k",
        auth: { type: "static_bearer", token: SECRET, mcp_server_url: "bad" },
      })
    );
    const dataDir = server.dataDir;
    // Looked at while the server runs (WAL and shared memory present) and after it stopped.
    const look = async () => {
      const files = [audit];
      for await (const e of Deno.readDir(dataDir)) files.push(`${dataDir}/${e.name}`);
      let all = "";
      for (const f of files) {
        const bytes = new TextDecoder("latin1").decode(await Deno.readFile(f));
        assert.ok(!bytes.includes(SECRET), `${f} holds the secret`);
        assert.ok(!bytes.includes(ROTATED), `${f} holds the rotated secret`);
        all += bytes;
      }
      // The search does see what is stored in clear: the credential's name and server URL.
      assert.ok(all.includes("https://mcp.example/"));
      return files;
    };
    const files = await look();
    assert.ok(files.some((f) => f.endsWith("agents.sqlite")));
    assert.ok((await Deno.readTextFile(audit)).includes("agents_vaults_credentials_create"));
    await server.close();
    await look();
    await Deno.remove(dataDir, { recursive: true });
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
