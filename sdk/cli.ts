/**
 * The sandbox command line (the package exports it as `@sandbar/sandbar/cli`): what E2B users run
 * from a shell, on the same API a script uses, so `list` shows what `Sandbox.list()` returns.
 *
 * ```sh
 * deno run -A jsr:@sandbar/sandbar/cli list [--json]
 * deno run -A jsr:@sandbar/sandbar/cli exec <id> <command...>
 * deno run -A jsr:@sandbar/sandbar/cli connect <id>
 * deno run -A jsr:@sandbar/sandbar/cli logs <id>
 * deno run -A jsr:@sandbar/sandbar/cli kill <id...>
 * ```
 *
 * @module
 */

import { parseArgs } from "node:util";
import { nearestName } from "../shared/nearest_name.ts";
import { SandboxError } from "./errors/mod.ts";
import type { SandboxInfo } from "./models/sandbox.ts";
import { sandbarHome, SandboxDir } from "./providers/local/state.ts";
import { Sandbox } from "./sandbox/sandbox.ts";

/** What `--help` prints. */
export const USAGE = `usage: deno run -A jsr:@sandbar/sandbar/cli <command> [options]

commands:
  list [--json] [--status running|paused] [--limit N]
                     the sandboxes Sandbox.list() returns; --json prints exactly that
  exec ID CMD...     run a command in a sandbox (through bash), stream its output, exit with
                     its exit code; --timeout SECONDS (default 60, 0 for none)
  connect ID         an interactive shell in the sandbox (needs a terminal)
  logs ID            what the sandbox's server printed (local provider)
  kill ID...         kill sandboxes (Sandbox.killById); exits 1 if one was not there

options:
  --provider NAME    the provider (default SANDBAR_PROVIDER, else local)
  --version          print the version and exit
  -h, --help         print this and exit`;

const COMMANDS = ["list", "exec", "connect", "logs", "kill"] as const;

const OPTIONS = {
  json: { type: "boolean" },
  status: { type: "string" },
  limit: { type: "string" },
  timeout: { type: "string" },
  provider: { type: "string" },
  version: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** A command line that cannot be run, with what to do instead. */
class UsageError extends Error {}

function parse(argv: string[]) {
  // Everything after `exec ID` is the command, options included.
  const execAt = argv.indexOf("exec");
  const own = execAt >= 0 && argv.length > execAt + 2 ? argv.slice(0, execAt + 2) : argv;
  const rest = own === argv ? [] : argv.slice(execAt + 2);
  let parsed;
  try {
    parsed = parseArgs({ args: own, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    const flag = /'(-[^']*)'/.exec((e as Error).message)?.[1];
    const near = flag?.startsWith("--") ? nearestName(flag.slice(2), Object.keys(OPTIONS)) : "";
    throw new UsageError(
      `unknown option ${flag ?? (e as Error).message}` + (near ? `; did you mean --${near}?` : ""),
    );
  }
  return { values: parsed.values, positionals: [...parsed.positionals, ...rest] };
}

function table(sandboxes: SandboxInfo[]): string {
  const rows = sandboxes.map((s) => [
    s.sandboxId,
    s.status,
    s.template,
    s.startedAt?.toISOString() ?? "",
    s.endAt?.toISOString() ?? "",
    Object.entries(s.metadata).map(([k, v]) => `${k}=${v}`).join(","),
  ]);
  const all = [["ID", "STATUS", "TEMPLATE", "STARTED", "ENDS", "METADATA"], ...rows];
  const widths = all[0].map((_, i) => Math.max(...all.map((r) => r[i].length)));
  return all.map((r) => r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd()).join("\n");
}

const encoder = new TextEncoder();
const write = (out: { writeSync(p: Uint8Array): number }, text: string) => {
  const bytes = encoder.encode(text);
  let written = 0;
  while (written < bytes.length) written += out.writeSync(bytes.subarray(written));
};

async function exec(id: string, command: string[], timeout: number, provider?: string) {
  if (command.length === 0) throw new UsageError("exec needs a command: exec ID CMD...");
  const sandbox = await Sandbox.connect(id, { provider });
  let code = 1;
  for await (const chunk of sandbox.commands.stream(command.join(" "), { timeout })) {
    if (chunk.type === "stdout") write(Deno.stdout, chunk.data);
    else if (chunk.type === "stderr") write(Deno.stderr, chunk.data);
    else code = chunk.exitCode ?? 1;
  }
  return code;
}

async function connect(id: string, provider?: string): Promise<number> {
  if (!Deno.stdin.isTerminal()) {
    throw new UsageError("connect needs a terminal on stdin; use exec ID CMD... from scripts");
  }
  const sandbox = await Sandbox.connect(id, { provider });
  const { columns, rows } = Deno.consoleSize();
  await using term = await sandbox.getTerminal({ cols: columns, rows });
  Deno.stdin.setRaw(true);
  try {
    const output = (async () => {
      for await (const bytes of term) await Deno.stdout.write(bytes);
    })();
    const input = (async () => {
      const buffer = new Uint8Array(4096);
      while (true) {
        const n = await Deno.stdin.read(buffer);
        if (n === null) break;
        term.send(buffer.slice(0, n));
      }
    })();
    const exit = await term.exited;
    void input.catch(() => {});
    await output.catch(() => {});
    return exit?.exitCode ?? 0;
  } finally {
    Deno.stdin.setRaw(false);
  }
}

async function logs(id: string, provider?: string): Promise<number> {
  if ((provider ?? Deno.env.get("SANDBAR_PROVIDER") ?? "local") !== "local") {
    throw new UsageError("logs reads a local sandbox's log; this provider keeps its own");
  }
  try {
    write(Deno.stdout, await Deno.readTextFile(new SandboxDir(sandbarHome(), id).log));
    return 0;
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    throw new UsageError(`no local sandbox ${id} (list shows the sandboxes there are)`);
  }
}

/** Runs the command line `argv`; returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv);
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.version) {
    const { SERVER_VERSION } = await import("../server/version.ts");
    console.log(`sandbar ${SERVER_VERSION}`);
    return 0;
  }
  const [command, ...args] = positionals;
  const provider = values.provider;
  if (!(COMMANDS as readonly string[]).includes(command)) {
    const near = command ? nearestName(command, COMMANDS) : undefined;
    throw new UsageError(
      command === undefined
        ? `a command is needed: ${COMMANDS.join(", ")}`
        : `unknown command ${command}; ` +
          (near ? `did you mean ${near}?` : `the commands are ${COMMANDS.join(", ")}`),
    );
  }
  const id = args[0];
  if (command !== "list" && id === undefined) throw new UsageError(`${command} needs a sandbox id`);
  switch (command) {
    case "list": {
      const sandboxes = await Sandbox.list({
        provider,
        ...(values.status ? { status: values.status as SandboxInfo["status"] } : {}),
        ...(values.limit ? { limit: Number(values.limit) } : {}),
      });
      console.log(values.json ? JSON.stringify(sandboxes, null, 2) : table(sandboxes));
      return 0;
    }
    case "exec":
      return await exec(id, args.slice(1), Number(values.timeout ?? 60), provider);
    case "connect":
      return await connect(id, provider);
    case "logs":
      return await logs(id, provider);
    default: {
      let code = 0;
      for (const each of args) {
        if (await Sandbox.killById(each, { provider })) {
          console.log(`killed ${each}`);
        } else {
          console.error(`sandbar: no sandbox ${each}`);
          code = 1;
        }
      }
      return code;
    }
  }
}

if (import.meta.main) {
  let code: number;
  try {
    code = await main(Deno.args);
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`sandbar: ${e.message}\nRun with --help for the commands.`);
      code = 2;
    } else if (e instanceof SandboxError) {
      console.error(`sandbar: ${e.message}${e.suggestion ? `\n${e.suggestion}` : ""}`);
      code = 1;
    } else {
      console.error(`sandbar: ${(e as Error).message}`);
      code = 1;
    }
  }
  Deno.exit(code);
}
