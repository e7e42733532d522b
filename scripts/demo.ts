/**
 * `deno task demo`: a tour of a local sandbox. It creates one (an isolated process tree on this
 * machine running the in-sandbox server), and shows with real calls: health, capabilities, a
 * policy denial and a named command working, then commands, files, code, a terminal and a port.
 * The sandbox is killed at the end; nothing is left behind.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { PolicyDeniedError, ProviderFeatureNotSupportedError, Sandbox } from "../sdk/mod.ts";

const COMMANDS = fileURLToPath(new URL("./demo/commands.ts", import.meta.url));
const READER_TOKEN = "reader-token-for-the-demo";

function show(title: string, value: unknown) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  console.log(`\n== ${title}\n${text.trimEnd()}`);
}

/**
 * Run the demo (in a private SANDBAR_HOME, removed at the end). Returns the exit code: 1 when a
 * prerequisite is missing (said plainly on stderr, with how to get it).
 */
export async function main(): Promise<number> {
  const home = await Deno.makeTempDir({ prefix: "sandbar-demo-" });
  Deno.env.set("SANDBAR_HOME", home);
  try {
    await tour();
    return 0;
  } catch (e) {
    if (!(e instanceof ProviderFeatureNotSupportedError)) throw e;
    console.error(`\nThe demo cannot start a sandbox on this machine:\n${e.message}`);
    console.error("To tour it without isolation: SANDBAR_ISOLATION=none deno task demo");
    return 1;
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}

/** Whether the sandbox has `program` (optional parts of the tour need python3). */
async function has(sandbox: Sandbox, program: string): Promise<boolean> {
  return (await sandbox.commands.run(`command -v ${program}`)).exitCode === 0;
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
    `${sandbox.id} (${sandbox.provider}, isolation ${sandbox.info.isolation}) in ${
      (performance.now() - t0).toFixed(0)
    } ms, ` +
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

  // Relative paths are in the sandbox's home (/home/user under bubblewrap).
  await sandbox.files.write("notes/todo.txt", "ship it\n");
  await sandbox.files.write("notes/bytes.bin", new Uint8Array([0, 1, 254, 255]));
  show(
    "files",
    (await sandbox.files.list("notes")).map((f) => `${f.name} ${f.size} B`).join(", "),
  );

  const python = await has(sandbox, "python3");
  if (sandbox.capabilities.has("code")) {
    const code = await sandbox.runCode(
      "import platform; print(sum(range(10)), platform.python_version())",
    );
    show("runCode (python)", code.text);
  } else {
    show("runCode (python)", "skipped: Python contexts need python3 and python3-ipykernel");
  }

  await using term = await sandbox.getTerminal({ cols: 80, rows: 24 });
  term.send("echo $((6 * 7)) && tty\r");
  await term.expect("42");
  show("terminal", (await term.expect(/\/dev\/pts\/\d+/)).trim().split("\n").at(-1));

  if (python) await port8000(sandbox);
  else show("port 8000", "skipped: the tour serves it with python3 -m http.server");

  await term.close();
  await sandbox.kill();
  show("after kill", { listed: (await Sandbox.list()).filter((i) => i.sandboxId === sandbox.id) });
}

async function port8000(sandbox: Sandbox): Promise<void> {
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
  // getUrl needs getAccessHeaders() in secure mode; a browser sends no header, so it gets a
  // signed link (an hour), which the gateway turns into a cookie for that port.
  show(`port 8000, for a browser (1 h): ${sandbox.network.getSignedUrl(8000)}`, body);
  await web.kill();
}

if (import.meta.main) Deno.exit(await main());
