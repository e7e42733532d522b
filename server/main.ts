/**
 * The server's command line (the package exports it as `@sandbar/sandbar/server/cli`).
 *
 * ```sh
 * deno run -A server/main.ts [--host 127.0.0.1] [--port 9000] [--pty-port 9001] \
 *   [--policy FILE.jsonc] [--root DIR] [--commands FILE.ts] [--audit-log FILE] [--no-narrow] \
 *   [--data-dir DIR] [--abstract-sockets]
 * deno run -A jsr:@sandbar/sandbar/server/cli --help
 * ```
 *
 * Run with `-A`, it is a launcher: it validates the policy (a bad one stops it here with the
 * file, line and column), checks that `--root` (default: the current directory) is a directory,
 * settles the token (`SVC_SERVER_TOKEN`, or a generated one printed once on stderr), and starts
 * the real server as a child under the narrowest Deno permissions the policy implies (see
 * `server/confine/deno_permissions.ts`). `--no-narrow` skips that and serves in this process. When listening,
 * the server prints one JSON line on stdout:
 * `{"event":"listening","url":"http://…","pty_url":"ws://…","capabilities":["code",…]}` (the
 * default identity's capability names, as its capabilities document gives them).
 *
 * `--abstract-sockets` is for a server behind a relay preloaded into its process (a local or
 * docker sandbox's): it then listens on two abstract Unix sockets with random names where the
 * kernel keeps every process it starts from connecting to them (see `startServer`), and its
 * line says `http+unix://%40sandbar-…-9000` and `ws+unix://%40sandbar-…-9001`.
 *
 * `--data-dir` (or `SANDBAR_DATA_DIR`) is where the agents group keeps its store; see
 * `server/agents/config.ts` for the default.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { agentsConfig, agentsSecretVariables, resolveDataDir } from "./agents/config.ts";
import { ENDPOINTS } from "./endpoints.ts";
import { jsonLinesSink } from "./pipeline/audit.ts";
import {
  closeInheritedOnExec,
  forgetSecretVariables,
  hideFromSameUser,
} from "./confine/hardening.ts";
import { resolve } from "node:path";
import { narrowedServerArgv } from "./launch.ts";
import { compilePolicy } from "./policy/compile.ts";
import { watchParent } from "./parent_watch.ts";
import { workDescriptors } from "./process/work_cgroup.ts";
import { portHolder, portInUseMessage } from "./port_holder.ts";
import { generateToken, MIN_TOKEN_LENGTH, tokenTooShort } from "./token.ts";
import { SERVER_VERSION } from "./version.ts";
import { nearestName } from "../shared/nearest_name.ts";

/** What `--help` prints. */
export const USAGE = `usage: deno run -A jsr:@sandbar/sandbar/server/cli [options]
       (from a checkout: deno run -A server/main.ts [options], or deno task start [options])

options:
  --host HOST        address to listen on (default 127.0.0.1)
  --port N           HTTP port (default 9000; 0 picks a free one)
  --pty-port N       PTY WebSocket port (default 9001; 0 picks a free one)
  --policy FILE      policy file (JSONC); without one the "standard" preset applies and paths
                     are limited to --root
  --root DIR         the server's root directory (default: the current directory); it must
                     exist. Relative paths resolve against it, and unless the policy says
                     otherwise it is the only tree the server may touch
  --commands FILE    a module whose default export registers named commands
  --audit-log FILE   append audit lines (JSON) to FILE instead of stderr
  --data-dir DIR     where the agents group keeps its store (default: SANDBAR_DATA_DIR, else
                     $XDG_STATE_HOME/sandbar, else ~/.local/state/sandbar)
  --no-narrow        serve in this process instead of a child under narrowed permissions
  --abstract-sockets listen on two abstract Unix sockets named at random instead of TCP, where
                     Landlock (ABI 6) keeps every process the server starts from connecting to
                     them; elsewhere on --host and the ports. For a server reached through a
                     relay preloaded into its process (a sandbox's)
  --version          print the version and exit
  --await-claim      once listening, read one claim line (new tokens, environment) on stdin
                     and print {"event":"claimed"}: a pooled server (server/claim.ts)
  -h, --help         print this and exit

environment:
  SVC_SERVER_TOKEN   the default identity's token, at least ${MIN_TOKEN_LENGTH} characters like every
                     token; without it one is generated and printed once on stderr
  SANDBAR_DATA_DIR   the default of --data-dir
  SANDBAR_ABSTRACT_SOCKETS  off: TCP even with --abstract-sockets

Once listening it prints {"event":"listening","url":…,"pty_url":…,"capabilities":[…]} on
stdout (the default identity's capability names); the policy's
warnings go to stderr. It stops on SIGINT or SIGTERM, and when the process that started it ends.`;

/** A command line that asks for something other than a server. */
class UsageRequested extends Error {}

/** A command line that asks for the version. */
class VersionRequested extends Error {}

const OPTIONS = {
  host: { type: "string", default: "127.0.0.1" },
  port: { type: "string", default: "9000" },
  "pty-port": { type: "string", default: "9001" },
  policy: { type: "string" },
  root: { type: "string" },
  commands: { type: "string" },
  "audit-log": { type: "string" },
  "data-dir": { type: "string" },
  "no-narrow": { type: "boolean", default: false },
  "await-claim": { type: "boolean", default: false },
  "abstract-sockets": { type: "boolean", default: false },
} as const;

function parse(args: string[]) {
  if (args.includes("--help") || args.includes("-h")) throw new UsageRequested();
  if (args.includes("--version")) throw new VersionRequested();
  let values;
  try {
    ({ values } = parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (e) {
    throw unknownOption(e as Error);
  }
  const port = Number(values.port);
  const ptyPort = Number(values["pty-port"]);
  for (const [name, v] of [["--port", port], ["--pty-port", ptyPort]] as const) {
    if (!Number.isInteger(v) || v < 0 || v > 65535) {
      throw new Error(`${name} must be a port number`);
    }
  }
  return { ...values, port, ptyPort, root: values.root ?? Deno.cwd() };
}

/** A parse error made plain, with the nearest option for a misspelled one. */
function unknownOption(error: Error): Error {
  const flag = /'(-[^']*)'/.exec(error.message)?.[1];
  if (!flag || !/Unknown option/.test(error.message)) return error;
  const names = [...Object.keys(OPTIONS), "help", "version"];
  const near = flag.startsWith("--") ? nearestName(flag.slice(2), names) : undefined;
  return new Error(
    `unknown option ${flag}; ` +
      (near
        ? `did you mean --${near}?`
        : `the options are ${names.map((n) => `--${n}`).join(", ")}`),
  );
}

/** Refuses a port another process already listens on, naming the port and who holds it. */
async function checkPortsFree(host: string, ports: [number, string][]): Promise<void> {
  for (const [port, flag] of ports) {
    if (port === 0) continue;
    try {
      Deno.listen({ hostname: host, port }).close();
    } catch (e) {
      if (e instanceof Deno.errors.AddrInUse) {
        throw new Error(await portInUseMessage(host, port, flag));
      }
      throw e;
    }
  }
}

/** Why `--abstract-sockets` would listen on TCP here, or null (loaded only when asked). */
async function socketsUnavailable(): Promise<string | null> {
  const { abstractSocketsUnavailable } = await import("./confine/confinement.ts");
  return abstractSocketsUnavailable();
}

/** `--root` must name a directory that exists: otherwise every request would fail. */
async function checkRoot(root: string): Promise<void> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(root);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new Error(
        `--root ${root} does not exist; create it (mkdir -p ${root}) or name another`,
      );
    }
    throw new Error(`--root ${root}: ${(e as Error).message}`);
  }
  if (!info.isDirectory) throw new Error(`--root ${root} is not a directory`);
}

type Args = ReturnType<typeof parse>;

async function launch(args: Args, raw: string[]): Promise<number> {
  hideFromSameUser();
  await checkRoot(args.root);
  closeInheritedOnExec();
  // Read here only with --policy: the reader's checks load zod, which a launcher without a file
  // does not need (the server it starts reads the file again, under its own permissions).
  const file = args.policy
    ? await (await import("./policy/read.ts")).loadPolicyFile(args.policy)
    : undefined;
  const env = Deno.env.toObject();
  let token = env.SVC_SERVER_TOKEN;
  const short = token ? tokenTooShort(token, "SVC_SERVER_TOKEN") : undefined;
  if (short) throw new Error(`${short} (unset it and one is generated)`);
  // On abstract sockets the ports are not used: no need for them to be free.
  if (!args["abstract-sockets"] || await socketsUnavailable()) {
    await checkPortsFree(args.host, [[args.port, "--port"], [args.ptyPort, "--pty-port"]]);
  }
  if (!token) {
    token = generateToken();
    console.error(`sandbar: generated token (set SVC_SERVER_TOKEN to choose one): ${token}`);
  }
  const policy = compilePolicy(file ?? {}, {
    root: args.root,
    env,
    // Every id has a handler (`HANDLERS` is complete by type): the launcher does not load them.
    implemented: new Set(ENDPOINTS.map((e) => e.id)),
    defaultToken: token,
    configured: file !== undefined,
  });
  for (const warning of policy.warnings) console.error(`sandbar: warning: ${warning}`);
  const stateDir = await Deno.makeTempDir({ prefix: "sandbar-" });
  const agents = agentsConfig(resolveDataDir(args["data-dir"], env), env, file);
  const argv = narrowedServerArgv({
    agents,
    policy,
    root: args.root,
    host: args.host,
    stateDir,
    commandsFile: args.commands,
    auditLog: args["audit-log"],
    policyFile: args.policy,
    serverArgs: raw,
    abstractSockets: args["abstract-sockets"],
  });
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    env: { SVC_SERVER_TOKEN: token, SANDBAR_STATE_DIR: stateDir },
    // A pooled server reads its claim from the launcher's stdin.
    stdin: args["await-claim"] ? "inherit" : "null",
  }).spawn();
  const forward = (signal: Deno.Signal) => () => {
    try {
      child.kill(signal);
    } catch { /* already gone */ }
  };
  const handlers = (["SIGINT", "SIGTERM"] as const).map((s) => [s, forward(s)] as const);
  for (const [s, h] of handlers) Deno.addSignalListener(s, h);
  // npx does not forward SIGTERM: when whatever started this launcher ends, so does the server.
  const stopWatching = watchParent(forward("SIGTERM"));
  const status = await child.status;
  stopWatching();
  for (const [s, h] of handlers) Deno.removeSignalListener(s, h);
  await Deno.remove(stateDir, { recursive: true }).catch(() => {});
  return status.code;
}

async function serve(args: Args): Promise<number> {
  // Loaded here, not at the top: the launcher (`launch`) needs none of the server's modules.
  const [{ startServer }, { protectPath }, { withholdPaths }, { capabilityNamesOf }] = await Promise
    .all([
      import("./serve.ts"),
      import("./confine/confinement.ts"),
      import("./files/withheld.ts"),
      import("./handlers/core/capabilities.ts"),
    ]);
  hideFromSameUser();
  await checkRoot(args.root);
  workDescriptors(); // before any child: the variable reaches none
  closeInheritedOnExec();
  // The audit log and the policy file (identities' tokens) are no business of any process.
  for (const secret of [args["audit-log"], args.policy]) if (secret) protectPath(resolve(secret));
  // Nor of any file endpoint, even through a link (`paths.symlinks: "allow"`).
  if (args["audit-log"]) withholdPaths([resolve(args["audit-log"])]);
  const auditFile = args["audit-log"]
    ? await Deno.open(args["audit-log"], { append: true, create: true })
    : undefined;
  // Listened for before the server makes anything: a signal at any moment after (while it
  // starts, right after its listening line, while a pooled server waits for its claim) stops it
  // through `close`, which removes what it made (its state directory), instead of killing it.
  const stopped = Promise.withResolvers<void>();
  for (const s of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(s, () => stopped.resolve());
  }
  // Started by the launcher or by a wrapper that does not forward signals: stop with it.
  const stopWatching = watchParent(() => stopped.resolve());
  const stop = async (server: { close(): Promise<void> }) => {
    stopWatching();
    await server.close();
    auditFile?.close();
  };
  let stopAsked = false;
  stopped.promise.then(() => stopAsked = true);
  const server = await startServer({
    host: args.host,
    port: args.port,
    ptyPort: args.ptyPort,
    policyFile: args.policy,
    root: args.root,
    commandsFile: args.commands,
    stateDir: Deno.env.get("SANDBAR_STATE_DIR"),
    dataDir: args["data-dir"],
    audit: jsonLinesSink(auditFile ?? Deno.stderr),
    abstractSockets: args["abstract-sockets"],
  }).catch(async (e) => {
    if (!(e instanceof Deno.errors.AddrInUse)) throw e;
    if (args["abstract-sockets"] && !(await socketsUnavailable())) {
      // 128 random bits each: taken only by someone who read the names first.
      throw new Error(`an abstract socket name drawn for the server is taken: ${e.message}`);
    }
    for (const [port, flag] of [[args.port, "--port"], [args.ptyPort, "--pty-port"]] as const) {
      if (port !== 0 && await portHolder(port)) {
        throw new Error(await portInUseMessage(args.host, port, flag));
      }
    }
    throw new Error(`port ${args.port} or ${args.ptyPort} on ${args.host} is already in use`);
  });
  if (server.tokenGenerated) {
    console.error(`sandbar: generated token (set SVC_SERVER_TOKEN to choose one): ${server.token}`);
  }
  // Processes the server starts must never inherit a credential, nor read it in /proc.
  const secrets = ["SVC_SERVER_TOKEN", ...agentsSecretVariables(server.state.policy.source)];
  for (const identity of server.state.policy.source.identities ?? []) {
    if (identity.token_env) secrets.push(identity.token_env);
  }
  forgetSecretVariables(secrets);
  if (stopAsked) {
    await stop(server);
    return 0;
  }
  // With the default identity's capability names: what a provider would otherwise ask for.
  const own = server.state.policy.identities.find((i) => i.token === server.token);
  const capabilities = own ? capabilityNamesOf(server.state, own) : undefined;
  console.log(
    JSON.stringify({ event: "listening", url: server.url, pty_url: server.ptyUrl, capabilities }),
  );
  console.error(`sandbar: listening on ${server.url} (PTY ${server.ptyUrl})`);
  if (args["await-claim"]) {
    try {
      // Waiting for a claim leaves time for the groups a claimant's first requests would load.
      const preload = import("./handlers/mod.ts").then((m) => m.groupsUsedSoon()).catch(() => {});
      const claimed = (await import("./claim.ts")).awaitClaim(server.state).then(() => true);
      if (!await Promise.race([claimed, stopped.promise.then(() => false)])) {
        await stop(server);
        return 0;
      }
      await preload;
    } catch (e) {
      console.error(`sandbar: ${(e as Error).message}`);
      await stop(server);
      return 1;
    }
  }
  await stopped.promise;
  await stop(server);
  return 0;
}

if (import.meta.main) {
  let code: number;
  try {
    const raw = Deno.args;
    const args = parse(raw);
    code = args["no-narrow"] ? await serve(args) : await launch(args, raw);
  } catch (e) {
    if (e instanceof UsageRequested) {
      console.log(USAGE);
      code = 0;
    } else if (e instanceof VersionRequested) {
      console.log(`sandbar ${SERVER_VERSION}`);
      code = 0;
    } else {
      // A PolicyLoadError's message already names the file, line and column.
      console.error(`sandbar: ${(e as Error).message}`);
      if (e instanceof TypeError && "code" in e && String(e.code).startsWith("ERR_PARSE_ARGS")) {
        console.error("Run with --help for the options.");
      }
      code = 2;
    }
  }
  Deno.exit(code);
}
