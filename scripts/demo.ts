/**
 * `deno task demo`: start the in-sandbox server on free ports with a generated token, and show
 * with real requests what it does: health, the capabilities document, a policy denial and a
 * named command working. Leaves nothing behind.
 *
 * @module
 */

import { fileURLToPath } from "node:url";

const MAIN = fileURLToPath(new URL("../server/main.ts", import.meta.url));
const COMMANDS = fileURLToPath(new URL("./demo/commands.ts", import.meta.url));

function show(title: string, value: unknown) {
  console.log(`\n== ${title}`);
  console.log(typeof value === "string" ? value : JSON.stringify(value, null, 2));
}

/** Run the demo. */
export async function main(): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "sandbar-demo-" });
  const policyFile = `${root}/policy.jsonc`;
  await Deno.writeTextFile(
    policyFile,
    `{
  // A reader may list commands but not run them.
  "identities": [{ "id": "reader", "token": "reader-token-for-the-demo", "scopes": ["commands:read"] }],
  "endpoints": { "browser": false },
  "audit": "deny"
}`,
  );
  const env = Deno.env.toObject();
  delete env.SVC_SERVER_TOKEN; // so that the server generates one and prints it once
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      MAIN,
      "--port",
      "0",
      "--pty-port",
      "0",
      "--root",
      root,
      "--policy",
      policyFile,
      "--commands",
      COMMANDS,
      "--audit-log",
      `${root}/audit.jsonl`,
    ],
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  try {
    const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    while (!out.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) throw new Error("the server exited before listening");
      out += value;
    }
    const { url } = JSON.parse(out.split("\n")[0]);
    const errReader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
    let err = "";
    while (!err.includes("generated token")) err += (await errReader.read()).value ?? "";
    const token = /generated token[^:]*: (\S+)/.exec(err)![1];
    show("server", `listening on ${url}; token generated and printed once on stderr`);
    const auth = { authorization: `Bearer ${token}` };

    show("GET /health (no token needed)", await (await fetch(`${url}/health`)).json());
    const caps = await (await fetch(`${url}/capabilities`, { headers: auth })).json();
    show("GET /capabilities (summary)", {
      identity_id: caps.identity_id,
      preset: caps.preset,
      revision: caps.revision,
      groups: Object.entries(
        caps.group_summary as Record<string, { enabled: number; total: number }>,
      )
        .map(([g, s]) => `${g} ${s.enabled}/${s.total}`).join(", "),
      "endpoints.browser_navigate": caps.endpoints.browser_navigate,
    });
    show(
      "GET /commands without a token",
      await (await fetch(`${url}/commands`)).json(),
    );
    const denied = await fetch(`${url}/commands/word_count`, {
      method: "POST",
      headers: { authorization: "Bearer reader-token-for-the-demo" },
      body: JSON.stringify({ text: "a b c" }),
    });
    show(`POST /commands/word_count as reader -> ${denied.status}`, await denied.json());
    const disabled = await fetch(`${url}/browser/navigate`, { method: "POST", headers: auth });
    show(`POST /browser/navigate -> ${disabled.status}`, await disabled.json());
    show("GET /commands", await (await fetch(`${url}/commands`, { headers: auth })).json());
    const ran = await fetch(`${url}/commands/word_count`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ text: "the quick brown fox" }),
    });
    show(`POST /commands/word_count -> ${ran.status}`, await ran.json());
    child.kill("SIGTERM");
    await child.status;
    await errReader.cancel();
    await lines.cancel();
    show("audit log (denials only)", await Deno.readTextFile(`${root}/audit.jsonl`));
  } finally {
    try {
      child.kill("SIGTERM");
    } catch { /* already stopped */ }
    await child.status;
    await Deno.remove(root, { recursive: true });
  }
}

if (import.meta.main) await main();
