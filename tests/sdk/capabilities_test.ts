/**
 * ServerCapabilities: every member of the contract's table, on documents from a real server.
 */

import assert from "node:assert/strict";
import {
  CapabilityNotSupportedError,
  EndpointNotAvailableError,
  PolicyDeniedError,
  ServerCapabilities,
  ServerClient,
} from "../../sdk/mod.ts";
import { startTestServer } from "../helpers/server.ts";

const AGENT_TOKEN = "agent-token-0123456789abcdef";

Deno.test("ServerCapabilities answers every member of the contract from a real document", async () => {
  await using server = await startTestServer({
    policy: {
      identities: [
        { id: "default", scopes: ["*"] },
        { id: "agent", token: AGENT_TOKEN, scopes: ["files:read", "process:*"] },
      ],
      endpoints: {
        terminal: false,
        shell: { limits: { rate_per_minute: 30, concurrency: 2 } },
      },
      paths: { allow: ["."], read_only: ["ref"], deny: ["**/.env", "**/*.pem"], symlinks: "deny" },
      params: { languages: ["python", "bash"] },
      allow_commands: ["git", "python3"],
    },
  });
  await using admin = new ServerClient(server.url, { token: server.token });
  const agent = admin.withToken(AGENT_TOKEN);
  try {
    const caps = await agent.discover();

    // Metadata.
    assert.equal(caps.identityId, "agent");
    assert.deepEqual(caps.scopes, ["files:read", "process:*"]);
    assert.equal(caps.preset, "standard");
    assert.equal(caps.configured, true);
    assert.equal(caps.apiVersion, "1");
    assert.match(caps.serverVersion, /^\d+\.\d+\.\d+/);
    assert.ok(caps.revision.length > 0);
    assert.ok(Array.isArray(caps.warnings));

    // can / denial / rule / info.
    assert.equal(caps.can("files_list"), true);
    assert.equal(caps.can("files_mkdir"), false);
    assert.equal(caps.denial("files_mkdir"), "missing_scope");
    assert.equal(caps.denial("pty_list"), "endpoint_disabled");
    assert.equal(caps.rule("pty_list"), "policy:endpoints.terminal");
    assert.equal(caps.denial("nope"), "unknown_endpoint");
    assert.equal(caps.denial("files_list"), null);
    assert.equal(caps.rule("files_list"), null);
    const info = caps.info("shell")!;
    assert.deepEqual(
      [info.method, info.path, info.group, info.port, info.enabled, info.allowed],
      ["POST", "/process/shell", "process", "http", true, true],
    );
    assert.deepEqual(info.scopes, ["process:run"]);
    assert.equal(caps.info("pty_connect")?.port, "pty");
    assert.equal(caps.info("nope"), null);

    // require: info when allowed, the right error when not, no request either way.
    assert.equal(caps.require("shell").id, "shell");
    assert.throws(() => caps.require("files_mkdir"), (e) => {
      assert.ok(e instanceof PolicyDeniedError);
      assert.equal(e.scope, "files:write");
      return true;
    });
    assert.throws(() => caps.require("pty_list"), (e) => {
      assert.ok(e instanceof EndpointNotAvailableError);
      assert.ok(e instanceof CapabilityNotSupportedError);
      assert.equal(e.rule, "policy:endpoints.terminal");
      return true;
    });
    assert.throws(() => caps.require("nope"), EndpointNotAvailableError);

    // limit / param / paths.
    assert.equal(caps.limit("shell", "rate_per_minute"), 30);
    assert.equal(caps.limit("shell", "ratePerMinute"), 30);
    assert.equal(caps.limit("shell", "concurrency"), 2);
    assert.equal(caps.limit("files_upload", "body_bytes"), 8 * 1024 ** 3);
    assert.equal(caps.limit("files_list", "concurrency", 99), 99);
    assert.deepEqual(caps.param("run_code", "languages"), ["python", "bash"]);
    assert.deepEqual(caps.param("shell", "allow_commands"), ["git", "python3"]);
    assert.deepEqual(caps.param("shell", "allowCommands"), ["git", "python3"]);
    assert.equal(caps.param("files_list", "languages", "none"), "none");
    const paths = caps.paths("files_list")!;
    assert.deepEqual(paths.allow, [server.root]);
    assert.deepEqual(paths.readOnly, [`${server.root}/ref`]);
    assert.equal(paths.denyCount, 2);
    assert.equal(paths.symlinks, "deny");
    assert.equal(caps.paths("commands_list"), null);

    // endpointsFor / available.
    const forRead = caps.endpointsFor("files:read");
    assert.ok(forRead.includes("files_list") && forRead.includes("files_download"));
    assert.ok(!forRead.includes("files_mkdir"));
    assert.ok(caps.endpointsFor("process:*").includes("shell"));
    assert.ok(caps.endpointsFor("*").length > 100);
    const available = caps.available();
    assert.ok(available.includes("files_list") && available.includes("shell"));
    assert.ok(!available.includes("files_mkdir") && !available.includes("pty_list"));
    assert.ok(available.includes("health"));

    // groups / groupSummary.
    assert.equal(caps.groups.terminal, false);
    assert.equal(caps.groups.file_ops, true);
    assert.equal(caps.groups.browser, false); // opt-in
    assert.deepEqual(caps.groupSummary.terminal, { enabled: 0, total: 6 });
    assert.deepEqual(caps.groupSummary.file_ops, { enabled: 12, total: 12 });

    // checkPath: the server decides, lexically.
    const denied = await caps.checkPath("files_download", "app/.env");
    assert.deepEqual([denied.allowed, denied.code], [false, "path_denied"]);
    const noScope = await caps.checkPath("files_upload", "ref/x.txt");
    assert.deepEqual([noScope.allowed, noScope.code], [false, "missing_scope"]);
    const ro = await (await admin.discover()).checkPath("files_upload", "ref/x.txt");
    assert.deepEqual([ro.allowed, ro.code, ro.operation], [false, "read_only", "write"]);
    const fine = await caps.checkPath("files_download", "ref/x.txt", "read");
    assert.equal(fine.allowed, true);

    // The raw document is kept.
    assert.equal(caps.toJSON().identity_id, "agent");
    assert.equal(caps.endpoints().length, 118);
  } finally {
    await agent.close();
  }
});

Deno.test("capabilities made without a client cannot check paths; a document without endpoints is refused", async () => {
  await using server = await startTestServer();
  const doc = await (await server.fetch("/capabilities")).json();
  const caps = new ServerCapabilities(doc);
  assert.equal(caps.can("files_list"), true);
  await assert.rejects(caps.checkPath("files_list", "x"), CapabilityNotSupportedError);
  assert.throws(
    () => new ServerCapabilities({ ...doc, endpoints: undefined }),
    CapabilityNotSupportedError,
  );
});
