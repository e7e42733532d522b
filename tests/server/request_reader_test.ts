// The one request reader: every JSON endpoint of the table refuses an unknown field and a body
// that is not a JSON object the same way, on the real server; and the reader's pure parts
// (strictness, the nearest field, the error shape) in process.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { type EndpointId, ENDPOINTS } from "../../server/endpoints.ts";
import { ApiError } from "../../server/errors.ts";
import { parseBody } from "../../server/request_reader.ts";
import { nearestName } from "../../shared/nearest_name.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";

const COMMANDS = fileURLToPath(new URL("./fixtures/commands.ts", import.meta.url));

/** POST endpoints whose body is not JSON: a file's raw bytes or a multipart form. */
const RAW_BODIES: ReadonlySet<EndpointId> = new Set(["files_upload", "files_upload_legacy"]);

const JSON_ENDPOINTS = ENDPOINTS.filter((e) =>
  e.method === "POST" && e.group !== "agents" && !RAW_BODIES.has(e.id)
);

/** The endpoint's path with its parameters filled by resources that exist on `server`. */
async function concretePath(server: TestServer, path: string): Promise<string> {
  if (path.includes(":pid")) {
    const res = await server.fetch("/process/start", {
      method: "POST",
      body: JSON.stringify({ argv: ["sleep", "60"] }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    return path.replace(":pid", String((await res.json()).pid));
  }
  if (path.includes(":id")) {
    const res = await server.fetch("/pty", { method: "POST", body: "{}" });
    assert.ok(res.ok, await res.clone().text());
    return path.replace(":id", (await res.json()).id);
  }
  return path.replace(":name", "greet");
}

async function refusal(res: Response): Promise<Record<string, unknown>> {
  const body = await res.json();
  assert.equal(res.status, 400, JSON.stringify(body));
  assert.equal(res.headers.get("content-type"), "application/json");
  assert.deepEqual(Object.keys(body).sort(), ["code", "endpoint", "error", "param", "type"]);
  assert.equal(body.type, "ValidationError");
  return body;
}

Deno.test("every JSON endpoint refuses an unknown field and a non-JSON body alike", async (t) => {
  assert.ok(JSON_ENDPOINTS.length >= 20, `${JSON_ENDPOINTS.length} JSON endpoints`);
  await using server = await startTestServer({
    commandsFile: COMMANDS,
    policy: { endpoints: { browser: true } },
  });
  for (const e of JSON_ENDPOINTS) {
    await t.step(`${e.id} (${e.method} ${e.path})`, async () => {
      const path = await concretePath(server, e.path);
      const unknown = await refusal(
        await server.fetch(path, {
          method: "POST",
          body: JSON.stringify({ unknown_field_x: 1 }),
        }),
      );
      assert.equal(unknown.code, "invalid_arguments");
      assert.equal(unknown.param, "unknown_field_x");
      assert.equal(unknown.endpoint, e.id);
      assert.match(unknown.error as string, /^Unknown (field|argument) "unknown_field_x"/);
      for (const body of ["{not json", "[1]", '"text"']) {
        const notJson = await refusal(await server.fetch(path, { method: "POST", body }));
        assert.deepEqual(notJson, {
          error: "The body must be a JSON object",
          type: "ValidationError",
          code: "invalid_request",
          endpoint: e.id,
          param: "body",
        }, body);
      }
    });
  }
});

Deno.test("a refused body leaves nothing behind: mkdir with an unknown field creates nothing", async () => {
  await using server = await startTestServer();
  const res = await server.fetch("/files/mkdir", {
    method: "POST",
    body: JSON.stringify({ path: "made", exists_ok: true }),
  });
  const body = await refusal(res);
  assert.equal(body.error, 'Unknown field "exists_ok"; did you mean "exist_ok"?');
  await assert.rejects(Deno.stat(`${server.root}/made`), Deno.errors.NotFound);
});

const Body = z.object({
  path: z.string(),
  recursive: z.boolean().default(false),
  timeout_ms: z.number().int().optional(),
  // Nested objects are declared strict; the reader makes the top level strict itself.
  viewport: z.strictObject({ width: z.number() }).optional(),
});

function refused(text: string): ApiError {
  try {
    parseBody(text, Body);
  } catch (e) {
    assert.ok(e instanceof ApiError);
    return e;
  }
  assert.fail(`${text} was accepted`);
}

Deno.test("parseBody: a valid body, defaults applied; an empty body is {}", () => {
  assert.deepEqual(parseBody('{"path":"a"}', Body), { path: "a", recursive: false });
  assert.deepEqual(parseBody("  ", z.object({ n: z.number().optional() })), {});
});

Deno.test("parseBody: an unknown field is named, with the nearest known one", () => {
  const typo = refused('{"path":"a","recursiv":true}');
  assert.equal(typo.code, "invalid_arguments");
  assert.equal(typo.options.param, "recursiv");
  assert.equal(typo.message, 'Unknown field "recursiv"; did you mean "recursive"?');
  const far = refused('{"path":"a","colour":"red"}');
  // No name is close: the known ones are listed instead.
  assert.equal(
    far.message,
    'Unknown field "colour"; the known fields are "path", "recursive", "timeout_ms", "viewport"',
  );
  // Reported before the missing field it is most likely a typo of.
  assert.equal(refused('{"pth":"a"}').message, 'Unknown field "pth"; did you mean "path"?');
  // A nested unknown field is named by its dotted path.
  const nested = refused('{"path":"a","viewport":{"width":1,"height":2}}');
  assert.equal(nested.options.param, "viewport.height");
});

Deno.test("parseBody: wrong types name the field; non-objects are one refusal", () => {
  const wrong = refused('{"path":"a","timeout_ms":1.5}');
  assert.equal(wrong.code, "invalid_arguments");
  assert.equal(wrong.options.param, "timeout_ms");
  assert.match(wrong.message, /^timeout_ms: /);
  for (const text of ["{", "[]", "null", "3", '"a"']) {
    const e = refused(text);
    assert.deepEqual([e.code, e.message, e.options.param], [
      "invalid_request",
      "The body must be a JSON object",
      "body",
    ], text);
  }
});

Deno.test("nearestName: close typos and prefixes only", () => {
  assert.equal(nearestName("pahts", ["path", "paths"]), "paths");
  assert.equal(nearestName("Timeout", ["timeout_ms", "path"]), "timeout_ms");
  assert.equal(nearestName("cmdd", ["cmd", "argv"]), "cmd");
  assert.equal(nearestName("x", ["cmd", "argv"]), undefined);
  assert.equal(nearestName("unknown_field_x", ["path", "depth"]), undefined);
});
