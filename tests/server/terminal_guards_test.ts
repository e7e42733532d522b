// The terminal group's refusals against the real server: the guards on shell, cwd and env, the
// body schema, scopes and ownership, and the WebSocket tokens that only the PTY port accepts.
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../helpers/server.ts";

const OTHER_TOKEN = "other-identity-token-0123456789";
const NO_SCOPE_TOKEN = "no-scope-identity-token-0123456789";

async function post(server: TestServer, body: unknown, token?: string) {
  const res = await server.post("/pty", body, { token });
  return { status: res.status, body: await res.json() };
}

async function refused(
  server: TestServer,
  body: unknown,
  status: number,
  code: string,
  param?: string,
) {
  const got = await post(server, body);
  assert.equal(got.status, status, JSON.stringify(got.body));
  assert.equal(got.body.code, code, JSON.stringify(got.body));
  assert.equal(got.body.endpoint, "pty_create");
  if (param) assert.equal(got.body.param, param);
}

/** Open a WebSocket and report how it went: the selected protocol, or the failure. */
function tryWebSocket(
  url: string,
  init: { protocols?: string[]; headers?: Record<string, string> } | string[] = {},
): Promise<{ opened: boolean; protocol: string; ready?: Record<string, unknown> }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, init as string[]);
    let opened = false;
    let ready: Record<string, unknown> | undefined;
    ws.onopen = () => {
      opened = true;
    };
    ws.onmessage = (e) => {
      ready ??= JSON.parse(e.data as string);
      ws.close();
    };
    ws.onerror = () => {};
    ws.onclose = () => resolve({ opened, protocol: ws.protocol, ready });
  });
}

Deno.test("pty_create refuses bad input with the contract's codes and starts nothing", async (t) => {
  await using server = await startTestServer({
    policy: {
      deny_commands: ["python3", "zsh"],
      env: { deny: ["LD_PRELOAD", "SECRET_*"] },
      paths: { deny: ["**/private"] },
    },
  });
  await Deno.mkdir(`${server.root}/private`);
  await Deno.writeTextFile(`${server.root}/file.txt`, "x");

  await t.step(
    "body shape: invalid_request if not JSON, invalid_arguments naming the field",
    async () => {
      await refused(server, "{not json", 400, "invalid_request");
      await refused(server, "[1]", 400, "invalid_request");
      await refused(server, { cols: 0 }, 400, "invalid_arguments", "cols");
      await refused(server, { rows: 1001 }, 400, "invalid_arguments", "rows");
      await refused(server, { cols: 80.5 }, 400, "invalid_arguments", "cols");
      await refused(server, { shell: "" }, 400, "invalid_arguments", "shell");
      await refused(server, { idle_timeout: 0 }, 400, "invalid_arguments", "idle_timeout");
      await refused(server, { args: "-l" }, 400, "invalid_arguments", "args");
      await refused(server, { colour: true }, 400, "invalid_arguments", "colour");
    },
  );

  await t.step("cwd through the path guard, and it must be a directory", async () => {
    await refused(server, { cwd: "/etc" }, 403, "path_not_allowed", "cwd");
    await refused(server, { cwd: "../" }, 403, "path_not_allowed", "cwd");
    await refused(server, { cwd: "private" }, 403, "path_denied", "cwd");
    await refused(server, { cwd: "a\u0000b" }, 400, "invalid_path", "cwd");
    await refused(server, { cwd: "missing" }, 400, "invalid_path", "cwd");
    await refused(server, { cwd: "file.txt" }, 400, "invalid_path", "cwd");
  });

  await t.step("env through the environment guard", async () => {
    await refused(server, { env: { LD_PRELOAD: "/tmp/x.so" } }, 403, "env_var_denied", "env");
    await refused(server, { env: { SECRET_KEY: "1" } }, 403, "env_var_denied", "env");
    await refused(server, { env: { SVC_SERVER_TOKEN: "x" } }, 403, "env_var_denied", "env");
    await refused(server, { env: { "BAD NAME": "1" } }, 400, "env_invalid", "env");
    await refused(server, { env: { N: 1 } }, 400, "env_invalid", "env");
    await refused(server, { env: ["A=1"] }, 400, "env_invalid", "env");
  });

  await t.step("shell through the command rules, and it must exist", async () => {
    await refused(server, { shell: "python3" }, 403, "command_not_allowed", "shell");
    await refused(server, { shell: "/usr/bin/python3" }, 403, "command_not_allowed", "shell");
    // A wrapper is looked through, as for process argv.
    await refused(server, { shell: "env", args: ["zsh"] }, 403, "command_not_allowed", "shell");
    await refused(server, { shell: "/no/such/shell" }, 400, "command_invalid", "shell");
    await refused(server, { shell: "no-such-shell-anywhere" }, 400, "command_invalid", "shell");
    // With command rules in force, PATH cannot be changed to make a name mean another program.
    await refused(server, { env: { PATH: "/tmp" } }, 403, "env_var_denied", "env");
  });

  await t.step("nothing was started by any refusal", async () => {
    const res = await server.fetch("/pty");
    assert.deepEqual(await res.json(), { terminals: [] });
  });

  await t.step("an allowed request still works, with its env and cwd", async () => {
    await Deno.mkdir(`${server.root}/sub`);
    const got = await post(server, {
      shell: "/bin/sh",
      args: ["-c", 'echo "$GREETING from $(pwd) on $TERM"; sleep 60'],
      cwd: "sub",
      env: { GREETING: "hello" },
    });
    assert.equal(got.status, 201);
    assert.equal(got.body.cwd, `${server.root}/sub`);
    const out = await new Promise<string>((resolve) => {
      let text = "";
      const ws = new WebSocket(`${server.ptyUrl}/pty/${got.body.id}/connect`, {
        headers: { authorization: `Bearer ${server.token}` },
      } as unknown as string[]);
      ws.binaryType = "arraybuffer";
      ws.onmessage = (e) => {
        if (typeof e.data !== "string") text += new TextDecoder().decode(e.data);
        if (text.includes("xterm-256color")) ws.close();
      };
      ws.onclose = () => resolve(text);
    });
    assert.match(out, new RegExp(`hello from ${server.root}/sub on xterm-256color`));
    const del = await server.fetch(`/pty/${got.body.id}`, { method: "DELETE" });
    assert.equal(del.status, 200);
    await del.body?.cancel();
  });
});

Deno.test("allow_commands: only an allowed shell starts", async () => {
  await using server = await startTestServer({ policy: { allow_commands: ["bash"] } });
  await refused(server, { shell: "/bin/sh" }, 403, "command_not_allowed", "shell");
  const ok = await post(server, { shell: "/bin/bash" });
  assert.equal(ok.status, 201, JSON.stringify(ok.body));
  const del = await server.fetch(`/pty/${ok.body.id}`, { method: "DELETE" });
  assert.equal(del.status, 200);
  await del.body?.cancel();
});

Deno.test("terminals belong to their identity; scopes are required, on both ports", async (t) => {
  await using server = await startTestServer({
    policy: {
      identities: [
        { id: "default", token: "test-token-0123456789abcdef", scopes: ["*"] },
        { id: "other", token: OTHER_TOKEN, scopes: ["terminal:use"] },
        { id: "reader", token: NO_SCOPE_TOKEN, scopes: ["files:read"] },
      ],
    },
  });
  const mine = await post(server, { shell: "/bin/bash", args: ["--norc"] });
  assert.equal(mine.status, 201);
  const id = mine.body.id;

  await t.step("another identity does not see or reach it", async () => {
    const list = await server.fetch("/pty", { token: OTHER_TOKEN });
    assert.deepEqual(await list.json(), { terminals: [] });
    for (const [method, path] of [["GET", `/pty/${id}`], ["DELETE", `/pty/${id}`]]) {
      const res = await server.fetch(path, { method, token: OTHER_TOKEN });
      assert.equal(res.status, 404);
      // Same answer as for an id that never existed: nothing tells the terminal is there.
      assert.deepEqual(await res.json(), {
        error: `No terminal ${id}`,
        type: "NotFoundError",
        code: "not_found",
        endpoint: method === "GET" ? "pty_get" : "pty_delete",
        param: "id",
      });
    }
    const resize = await server.fetch(`/pty/${id}/resize`, {
      method: "POST",
      body: JSON.stringify({ cols: 10, rows: 10 }),
      token: OTHER_TOKEN,
    });
    assert.equal(resize.status, 404);
    await resize.body?.cancel();
    const ws = await tryWebSocket(`${server.ptyUrl}/pty/${id}/connect`, {
      headers: { authorization: `Bearer ${OTHER_TOKEN}` },
    });
    assert.equal(ws.opened, false);
  });

  await t.step("an identity without terminal:use gets missing_scope", async () => {
    const got = await post(server, {}, NO_SCOPE_TOKEN);
    assert.equal(got.status, 403);
    assert.equal(got.body.code, "missing_scope");
    const http = `${server.ptyUrl.replace("ws://", "http://")}/pty/${id}/connect`;
    const res = await fetch(http, { headers: { authorization: `Bearer ${NO_SCOPE_TOKEN}` } });
    assert.equal(res.status, 403);
    assert.equal((await res.json()).code, "missing_scope");
  });

  const del = await server.fetch(`/pty/${id}`, { method: "DELETE" });
  assert.equal(del.status, 200);
  await del.body?.cancel();
});

Deno.test("the PTY port takes the token from a subprotocol or access_token; port 9000 does not", async (t) => {
  await using server = await startTestServer();
  const created = await post(server, { shell: "/bin/bash", args: ["--norc"] });
  const id = created.body.id;
  const url = `${server.ptyUrl}/pty/${id}/connect`;
  const http = url.replace("ws://", "http://");

  await t.step(
    "sandbar.bearer.<token> subprotocol; the server selects sandbar.pty.v1",
    async () => {
      const ws = await tryWebSocket(url, ["sandbar.pty.v1", `sandbar.bearer.${server.token}`]);
      assert.equal(ws.opened, true);
      assert.equal(ws.protocol, "sandbar.pty.v1");
      assert.equal(ws.ready?.type, "ready");
    },
  );

  await t.step("access_token query parameter", async () => {
    const ws = await tryWebSocket(`${url}?access_token=${server.token}`);
    assert.equal(ws.opened, true);
    assert.equal(ws.ready?.type, "ready");
  });

  await t.step("no token, or a wrong one, is refused before the upgrade", async () => {
    assert.equal((await tryWebSocket(url)).opened, false);
    assert.equal(
      (await tryWebSocket(url, ["sandbar.pty.v1", "sandbar.bearer.wrong"])).opened,
      false,
    );
    const res = await fetch(http);
    assert.equal(res.status, 401);
    assert.equal((await res.json()).code, "unauthorized");
    const wrong = await fetch(`${http}?access_token=wrong-token-value`);
    assert.equal(wrong.status, 401);
    await wrong.body?.cancel();
  });

  await t.step("two different tokens are ambiguous_credentials", async () => {
    const res = await fetch(`${http}?access_token=other-token-value`, {
      headers: { authorization: `Bearer ${server.token}` },
    });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).code, "ambiguous_credentials");
  });

  await t.step("a plain GET with a token is refused: the endpoint is a WebSocket", async () => {
    const res = await fetch(http, { headers: { authorization: `Bearer ${server.token}` } });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).code, "invalid_request");
  });

  await t.step("port 9000 refuses both ways of sending a token", async () => {
    const query = await server.fetch(`/pty?access_token=${server.token}`, { token: null });
    assert.equal(query.status, 401);
    assert.equal((await query.json()).code, "unauthorized");
    const proto = await server.fetch("/pty", {
      token: null,
      headers: { "sec-websocket-protocol": `sandbar.pty.v1, sandbar.bearer.${server.token}` },
    });
    assert.equal(proto.status, 401);
    assert.equal((await proto.json()).code, "unauthorized");
  });

  const del = await server.fetch(`/pty/${id}`, { method: "DELETE" });
  await del.body?.cancel();
});

Deno.test("a shell named through a relative PATH entry is looked up from the terminal's cwd", async () => {
  await using server = await startTestServer();
  const project = `${server.root}/project`;
  await Deno.mkdir(`${project}/bin`, { recursive: true });
  await Deno.writeTextFile(
    `${project}/bin/sandbar-shell`,
    "#!/bin/sh\necho started > started.txt\nexec sleep 30\n",
    { mode: 0o755 },
  );
  const env = { PATH: "bin:/usr/bin:/bin" };
  const ok = await post(server, { shell: "sandbar-shell", cwd: project, env });
  assert.equal(ok.status, 201, JSON.stringify(ok.body));
  for (let i = 0; i < 200; i++) {
    const text = await Deno.readTextFile(`${project}/started.txt`).catch(() => "");
    if (text === "started\n") break;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.equal(await Deno.readTextFile(`${project}/started.txt`), "started\n");
  const del = await server.fetch(`/pty/${ok.body.id}`, { method: "DELETE" });
  assert.equal(del.status, 200);
  await del.body?.cancel();
  // From another cwd the same name is nowhere.
  await refused(server, { shell: "sandbar-shell", cwd: server.root, env }, 400, "command_invalid");
});
