/**
 * `deno task demo`: a tour of a local sandbox. It creates one (an isolated process tree on this
 * machine running the in-sandbox server), and shows with real calls: health, capabilities, a
 * policy denial and a named command working, then commands, files, code, a terminal and a port.
 * The sandbox is killed at the end; nothing is left behind.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { PolicyDeniedError, Sandbox } from "../sdk/mod.ts";

const COMMANDS = fileURLToPath(new URL("./demo/commands.ts", import.meta.url));
const READER_TOKEN = "reader-token-for-the-demo";

function show(title: string, value: unknown) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  console.log(`\n== ${title}\n${text.trimEnd()}`);
}

/** Run the demo (in a private SANDBAR_HOME, removed at the end). */
export async function main(): Promise<void> {
  const home = await Deno.makeTempDir({ prefix: "sandbar-demo-" });
  Deno.env.set("SANDBAR_HOME", home);
  try {
    await tour();
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}

async function tour(): Promise<void> {
  const t0 = performance.now();
  await using sandbox = await Sandbox.create({
    timeout: 120,
    commandsFile: COMMANDS,
    policy: {
      // A reader may list the named commands but not run them; nobody may run curl.
      identities: [{ id: "reader", token: READER_TOKEN, scopes: ["commands:read"] }],
      deny_commands: ["curl"],
    },
  });
  show(
    "Sandbox.create()",
    `${sandbox.id} (${sandbox.provider}) in ${(performance.now() - t0).toFixed(0)} ms, ` +
      `lifetime until ${sandbox.info.endAt?.toISOString()}`,
  );
  show("health", { ok: await sandbox.server.health() });
  const caps = await sandbox.server.discover();
  const groups = Object.entries(caps.groupSummary).map(([g, s]) => `${g} ${s.enabled}/${s.total}`);
  show(
    "capabilities",
    `${[...sandbox.capabilities].join(", ")}\nendpoints on: ${groups.join(", ")}`,
  );

  show("named commands", await sandbox.listCommands());
  show("run('word_count')", await sandbox.run("word_count", { text: "the quick brown fox" }));
  try {
    await sandbox.server.withToken(READER_TOKEN).commands.run("word_count", { text: "a" });
  } catch (e) {
    if (!(e instanceof PolicyDeniedError)) throw e;
    show("the reader runs word_count: denied", `${e.name} ${e.code} ${e.message}`);
  }
  try {
    await sandbox.commands.run("curl -s https://example.com");
  } catch (e) {
    if (!(e instanceof PolicyDeniedError)) throw e;
    show("commands.run('curl …'): denied", `${e.name} ${e.code} ${e.message}`);
  }

  const r = await sandbox.commands.run("echo hello from $(hostname); id -un; ls /");
  show("commands.run", r.stdout.replaceAll("\n", " "));
  const streamed: string[] = [];
  for await (const chunk of sandbox.commands.stream("for i in 1 2 3; do echo $i; done")) {
    streamed.push(chunk.type === "exit" ? `exit ${chunk.exitCode}` : JSON.stringify(chunk.data));
  }
  show("commands.stream", streamed.join(" | "));

  await sandbox.files.write("/home/user/notes/todo.txt", "ship it\n");
  await sandbox.files.write("/home/user/notes/bytes.bin", new Uint8Array([0, 1, 254, 255]));
  show(
    "files",
    (await sandbox.files.list("/home/user/notes")).map((f) => `${f.name} ${f.size} B`).join(", "),
  );

  const code = await sandbox.runCode(
    "import platform; print(sum(range(10)), platform.python_version())",
  );
  show("runCode (python)", code.text);

  await using term = await sandbox.getTerminal({ cols: 80, rows: 24 });
  term.send("echo $((6 * 7)) && tty\r");
  await term.expect("42");
  show("terminal", (await term.expect(/\/dev\/pts\/\d+/)).trim().split("\n").at(-1));

  const web = await sandbox.commands.start("python3 -m http.server 8000 --bind 127.0.0.1", {
    timeout: 0,
  });
  const url = `${sandbox.url}/_port/8000/notes/todo.txt`;
  let body = "";
  for (let i = 0; i < 50 && !body; i++) {
    const res = await fetch(url, { headers: sandbox.network.getAccessHeaders() });
    body = res.ok ? await res.text() : (await res.body?.cancel(), "");
    if (!body) await new Promise((done) => setTimeout(done, 100));
  }
  show(`port 8000: ${sandbox.network.getUrl(8000)} (browsers, curl)`, body);
  await web.kill();

  await term.close();
  await sandbox.kill();
  show("after kill", { listed: (await Sandbox.list()).filter((i) => i.sandboxId === sandbox.id) });
}

if (import.meta.main) await main();
