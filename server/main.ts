/**
 * The server's command line.
 *
 * ```sh
 * deno run -A server/main.ts [--host 127.0.0.1] [--port 9000] [--pty-port 9001] \
 *   [--policy FILE.jsonc] [--root DIR] [--commands FILE.ts] [--audit-log FILE] [--no-narrow]
 * ```
 *
 * Run with `-A`, it is a launcher: it validates the policy (a bad one stops it here with the
 * file, line and column), settles the token (`SVC_SERVER_TOKEN`, or a generated one printed
 * once on stderr), and starts the real server as a child under the narrowest Deno permissions
 * the policy implies (see `server/permissions/`). `--no-narrow` skips that and serves in this
 * process. When listening, the server prints one JSON line on stdout:
 * `{"event":"listening","url":"http://…","pty_url":"ws://…"}`.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { HANDLERS } from "./handlers/mod.ts";
import { jsonLinesSink } from "./middleware/audit/index.ts";
import { closeInheritedOnExec, hideFromSameUser } from "./hardening.ts";
import { resolve } from "node:path";
import { protectPath } from "./confine/confinement.ts";
import { narrowedServerArgv } from "./launch.ts";
import { compilePolicy } from "./policy/compile.ts";
import { loadPolicyFile, PolicyLoadError } from "./policy/load.ts";
import { generateToken, startServer } from "./serve.ts";

function parse(args: string[]) {
  const { values } = parseArgs({
    args,
    options: {
      host: { type: "string", default: "127.0.0.1" },
      port: { type: "string", default: "9000" },
      "pty-port": { type: "string", default: "9001" },
      policy: { type: "string" },
      root: { type: "string" },
      commands: { type: "string" },
      "audit-log": { type: "string" },
      "no-narrow": { type: "boolean", default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  const port = Number(values.port);
  const ptyPort = Number(values["pty-port"]);
  for (const [name, v] of [["--port", port], ["--pty-port", ptyPort]] as const) {
    if (!Number.isInteger(v) || v < 0 || v > 65535) {
      throw new Error(`${name} must be a port number`);
    }
  }
  return { ...values, port, ptyPort, root: values.root ?? Deno.cwd() };
}

type Args = ReturnType<typeof parse>;

async function launch(args: Args, raw: string[]): Promise<number> {
  hideFromSameUser();
  closeInheritedOnExec();
  const file = args.policy ? await loadPolicyFile(args.policy) : undefined;
  const env = Deno.env.toObject();
  let token = env.SVC_SERVER_TOKEN;
  if (!token) {
    token = generateToken();
    console.error(`sandbar: generated token (set SVC_SERVER_TOKEN to choose one): ${token}`);
  }
  const policy = compilePolicy(file ?? {}, {
    root: args.root,
    env,
    implemented: new Set(Object.keys(HANDLERS)),
    defaultToken: token,
    configured: file !== undefined,
  });
  const stateDir = await Deno.makeTempDir({ prefix: "sandbar-" });
  const argv = narrowedServerArgv({
    policy,
    root: args.root,
    host: args.host,
    stateDir,
    commandsFile: args.commands,
    auditLog: args["audit-log"],
    policyFile: args.policy,
    serverArgs: raw,
  });
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    env: { SVC_SERVER_TOKEN: token, SANDBAR_STATE_DIR: stateDir },
    stdin: "null",
  }).spawn();
  const forward = (signal: Deno.Signal) => () => {
    try {
      child.kill(signal);
    } catch { /* already gone */ }
  };
  const handlers = (["SIGINT", "SIGTERM"] as const).map((s) => [s, forward(s)] as const);
  for (const [s, h] of handlers) Deno.addSignalListener(s, h);
  const status = await child.status;
  for (const [s, h] of handlers) Deno.removeSignalListener(s, h);
  await Deno.remove(stateDir, { recursive: true }).catch(() => {});
  return status.code;
}

async function serve(args: Args): Promise<number> {
  hideFromSameUser();
  closeInheritedOnExec();
  // The audit log and the policy file (identities' tokens) are no business of any process.
  for (const secret of [args["audit-log"], args.policy]) if (secret) protectPath(resolve(secret));
  const auditFile = args["audit-log"]
    ? await Deno.open(args["audit-log"], { append: true, create: true })
    : undefined;
  const server = await startServer({
    host: args.host,
    port: args.port,
    ptyPort: args.ptyPort,
    policyFile: args.policy,
    root: args.root,
    commandsFile: args.commands,
    stateDir: Deno.env.get("SANDBAR_STATE_DIR"),
    audit: jsonLinesSink(auditFile ?? Deno.stderr),
  });
  if (server.tokenGenerated) {
    console.error(`sandbar: generated token (set SVC_SERVER_TOKEN to choose one): ${server.token}`);
  }
  // Processes the server starts must never inherit a credential.
  Deno.env.delete("SVC_SERVER_TOKEN");
  for (const identity of server.state.policy.source.identities ?? []) {
    if (identity.token_env) Deno.env.delete(identity.token_env);
  }
  console.log(JSON.stringify({ event: "listening", url: server.url, pty_url: server.ptyUrl }));
  console.error(`sandbar: listening on ${server.url} (PTY ${server.ptyUrl})`);
  const stopped = Promise.withResolvers<void>();
  for (const s of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(s, () => stopped.resolve());
  }
  await stopped.promise;
  await server.close();
  auditFile?.close();
  return 0;
}

if (import.meta.main) {
  let code: number;
  try {
    const raw = Deno.args;
    const args = parse(raw);
    code = args["no-narrow"] ? await serve(args) : await launch(args, raw);
  } catch (e) {
    const message = e instanceof PolicyLoadError ? e.message : `${(e as Error).message}`;
    console.error(`sandbar: ${message}`);
    code = 2;
  }
  Deno.exit(code);
}
