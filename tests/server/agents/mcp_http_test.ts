/**
 * MCP tools over Streamable HTTP: the fixture server (the SDK's server side) on loopback,
 * reached by `openMcpTools` through the real server's URL guard, with vault credentials made
 * through the real `/v1/vaults` API: a static bearer token, and an OAuth access token that has
 * expired (or is refused) and is refreshed at a token endpoint beside the server.
 */

import assert from "node:assert/strict";
import { openCredentialSecrets } from "../../../server/agents/domain/vaults.ts";
import { agentsService } from "../../../server/agents/service.ts";
import { openMcpTools } from "../../../server/agents/mcp/tool_set.ts";
import type { McpToolConfig } from "../../../server/agents/mcp/types.ts";
import { type McpHarness, startMcpHarness } from "./fixtures/mcp/harness.ts";
import { startHttpMcpServer } from "./fixtures/mcp/http_server.ts";

const LOOPBACK = { url_allow: ["http://127.0.0.1:*"] };

function http(url: string, extra: Partial<McpToolConfig> = {}): McpToolConfig {
  return {
    type: "mcp",
    server_label: "web",
    transport: { type: "http", server_url: url },
    ...extra,
  } as McpToolConfig;
}

async function credential(h: McpHarness, auth: Record<string, unknown>) {
  const vault = await h.api("/v1/vaults", { name: "mcp" });
  const cred = await h.api(`/v1/vaults/${vault.id}/credentials`, { name: "web", auth });
  return { vaultId: vault.id as string, id: cred.id as string };
}

Deno.test("mcp http: a static_bearer credential opens the server; none or a wrong one does not", async () => {
  await using h = await startMcpHarness(LOOPBACK);
  const web = startHttpMcpServer("right-token-0123456789");
  try {
    const right = await credential(h, {
      type: "static_bearer",
      token: "right-token-0123456789",
      mcp_server_url: web.mcpUrl,
    });
    const wrong = await credential(h, {
      type: "static_bearer",
      token: "wrong-token-0123456789",
      mcp_server_url: web.mcpUrl,
    });

    const none = await openMcpTools([http(web.mcpUrl)], h.ctx());
    assert.equal(none.failures[0].error.code, "mcp_unauthorized");
    assert.match(none.failures[0].error.message, /requires authorization \(HTTP 401\)/);

    const refused = await openMcpTools([http(web.mcpUrl, { credential_id: wrong.id })], h.ctx());
    const error = refused.failures[0].error;
    assert.equal(error.code, "mcp_unauthorized");
    assert.match(error.message, /refused the credential \(HTTP 401\)/);
    assert.ok(!error.message.includes("wrong-token"));

    const set = await openMcpTools(
      [http(web.mcpUrl, { credential_id: right.id, allowed_tools: ["shout"] })],
      h.ctx({ vaultIds: [right.vaultId] }),
    );
    try {
      assert.deepEqual(set.failures, []);
      assert.deepEqual(set.tools.map((t) => t.name), ["web__shout"]);
      assert.deepEqual(await set.call("web__shout", { text: "hello" }), {
        output: "HELLO",
        isError: false,
      });
    } finally {
      await set.close();
    }
    assert.ok(web.seen.includes("Bearer right-token-0123456789"));

    // The session's vaults bound what a tool may name.
    const outside = await openMcpTools(
      [http(web.mcpUrl, { credential_id: right.id })],
      h.ctx({ vaultIds: [wrong.vaultId] }),
    );
    assert.equal(outside.failures[0].error.code, "credential_not_found");
    assert.equal(outside.failures[0].error.param, "credential_id");
  } finally {
    await web.close();
  }
});

Deno.test("mcp http: a credential is only sent to the origin it was issued for", async () => {
  await using h = await startMcpHarness(LOOPBACK);
  const web = startHttpMcpServer("token-for-elsewhere-0123");
  try {
    const cred = await credential(h, {
      type: "static_bearer",
      token: "token-for-elsewhere-0123",
      mcp_server_url: "https://mcp.example.com/",
    });
    const set = await openMcpTools([http(web.mcpUrl, { credential_id: cred.id })], h.ctx());
    assert.equal(set.failures[0].error.code, "credential_invalid");
    assert.match(set.failures[0].error.message, /is for https:\/\/mcp\.example\.com, not/);
    assert.deepEqual(web.seen, []);
  } finally {
    await web.close();
  }
});

Deno.test("mcp http: a URL the guard refuses is url_denied, and nothing is sent", async () => {
  const web = startHttpMcpServer("t0123456789abcdef");
  try {
    {
      // No url_allow: loopback is a private address.
      await using h = await startMcpHarness();
      const set = await openMcpTools([http(web.mcpUrl, { required: false })], h.ctx());
      assert.equal(set.failures[0].error.code, "url_denied");
      assert.equal(set.failures[0].error.rule, "private:loopback");
      assert.equal(set.failures[0].error.param, "transport.server_url");
    }
    {
      await using h = await startMcpHarness({ url_allow: ["https://mcp.example.com"] });
      const e = await openMcpTools([http(web.mcpUrl, { required: true })], h.ctx()).then(
        () => assert.fail("must fail"),
        (e) => e,
      );
      assert.equal(e.code, "url_denied");
      assert.equal(e.rule, "url_allow");
      assert.match(e.message, /required MCP server 'web' could not be used: URL .* is refused/);
    }
    {
      // A name, not the address url_allow names: judged by the name (no rebinding through it).
      await using h = await startMcpHarness(LOOPBACK);
      const set = await openMcpTools(
        [http(web.mcpUrl.replace("127.0.0.1", "localhost"))],
        h.ctx(),
      );
      assert.equal(set.failures[0].error.code, "url_denied");
    }
    assert.deepEqual(web.seen, []);
  } finally {
    await web.close();
  }
});

Deno.test("mcp http: an expired or refused OAuth access token is refreshed and stored sealed", async () => {
  await using h = await startMcpHarness(LOOPBACK);
  const token = {
    clientId: "client-1",
    clientSecret: "client-secret-0123456789",
    refreshToken: "refresh-1-0123456789",
    newAccessToken: "access-2-0123456789",
    newRefreshToken: "refresh-2-0123456789",
  };
  const web = startHttpMcpServer("access-2-0123456789", token);
  try {
    const cred = await credential(h, {
      type: "mcp_oauth",
      access_token: "access-1-0123456789",
      mcp_server_url: web.mcpUrl,
      expires_at: new Date(Date.now() - 3600_000).toISOString(),
      refresh: {
        client_id: "client-1",
        refresh_token: "refresh-1-0123456789",
        token_endpoint: web.tokenUrl,
        token_endpoint_auth: { type: "client_secret_basic", client_secret: token.clientSecret },
        scope: "tools",
      },
    });
    const tool = http(web.mcpUrl, { credential_id: cred.id });

    // Expired: refreshed before the first request, so the old token is never sent.
    let set = await openMcpTools([tool], h.ctx());
    assert.deepEqual(set.failures, []);
    assert.equal((await set.call("web__whisper", { text: "QUIET" })).output, "quiet");
    await set.close();
    assert.equal(web.tokenRequests.length, 1);
    assert.deepEqual(web.tokenRequests[0].form, {
      grant_type: "refresh_token",
      refresh_token: "refresh-1-0123456789",
      scope: "tools",
    });
    assert.ok(!web.seen.includes("Bearer access-1-0123456789"));

    // Stored: the new tokens sealed, the new expiry public, no secret in the answer.
    const stored = await h.api(`/v1/vaults/${cred.vaultId}/credentials/${cred.id}`);
    const auth = stored.auth as Record<string, unknown>;
    assert.ok(Date.parse(auth.expires_at as string) > Date.now() + 3000_000);
    assert.ok(!JSON.stringify(stored).includes("0123456789"));
    const service = agentsService(h.server.state);
    const row = service.store.get("credential", cred.id)!;
    const secrets = await openCredentialSecrets(service, row);
    assert.equal(secrets.access_token, "access-2-0123456789");
    assert.equal(secrets.refresh_token, "refresh-2-0123456789");

    // The next session uses the stored token as it is.
    set = await openMcpTools([tool], h.ctx());
    assert.equal((await set.call("web__shout", { text: "again" })).output, "AGAIN");
    await set.close();
    assert.equal(web.tokenRequests.length, 1);

    // Revoked before its expiry: the 401 makes one refresh, with the rotated refresh token.
    web.accepted = "access-3-0123456789";
    token.refreshToken = "refresh-2-0123456789";
    token.newAccessToken = "access-3-0123456789";
    set = await openMcpTools([tool], h.ctx());
    assert.deepEqual(set.failures, []);
    assert.equal((await set.call("web__shout", { text: "third" })).output, "THIRD");
    await set.close();
    assert.equal(web.tokenRequests.length, 2);

    // A refresh the endpoint refuses is an error that names no secret.
    web.accepted = "access-4-0123456789";
    token.refreshToken = "refresh-never-0123456789";
    set = await openMcpTools([tool], h.ctx());
    const error = set.failures[0].error;
    assert.equal(error.code, "credential_refresh_failed");
    assert.match(error.message, /invalid_grant/);
    for (const secret of ["access-3", "refresh-", "client-secret"]) {
      assert.ok(!error.message.includes(secret), secret);
    }
    await set.close();
  } finally {
    await web.close();
  }
});
