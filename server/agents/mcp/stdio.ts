/**
 * A `stdio` MCP server: its command passes the same guards as `POST /process/start` (the
 * `process:run` scope and the `process_start` endpoint, the command guard on `[command,
 * ...args]` as an argv, the environment guard, the path guard on `cwd`) and then runs in the
 * server's process table through {@linkcode ProcessStdioTransport}.
 *
 * @module
 */

import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ApiError } from "../../errors.ts";
import { commandRules, guardArgv } from "../../guards/commands/index.ts";
import { guardCwd, guardedEnvironment, spawnFailure } from "../../process/start.ts";
import { type ActionPolicy, requireAction } from "../../policy/on_behalf.ts";
import type { SpawnRequest } from "../../process/process_group.ts";
import { hostPath } from "../environments/workspace.ts";
import { McpServerError, redact } from "./errors.ts";
import { describeExit, ProcessStdioTransport } from "./process_transport.ts";
import type { McpContext, McpToolConfig } from "./types.ts";
import { withVenv } from "../environments/python_venv.ts";

type StdioTransportConfig = Extract<McpToolConfig["transport"], { type: "stdio" }>;

/** What starting a stdio server needs of the owner's policy: what `POST /process/start` needs. */
const STDIO_POLICY: ActionPolicy = {
  scope: "process:run",
  doing: "Running a stdio MCP server",
  endpoint: "process_start",
};

function guarded<T>(label: string, param: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof ApiError) throw McpServerError.fromApiError(label, e, param);
    throw e;
  }
}

/** The spawn request of a stdio server, through every guard. */
export async function stdioRequest(
  label: string,
  transport: StdioTransportConfig,
  ctx: McpContext,
): Promise<SpawnRequest> {
  const { state, identity } = ctx;
  guarded(label, "transport", () => requireAction(state.policy, identity, STDIO_POLICY));
  const argv = guarded(
    label,
    "transport.command",
    () => guardArgv(commandRules(state.policy), [transport.command, ...(transport.args ?? [])]),
  );
  const env = guarded(
    label,
    "env",
    () => withVenv(guardedEnvironment(state, ctx.env ?? {}), ctx.venv ?? null),
  );
  for (const [i, name] of (transport.env_vars ?? []).entries()) {
    if (!Object.hasOwn(env, name)) {
      throw new McpServerError(
        label,
        "mcp_config_invalid",
        `the variable ${name} of env_vars is not set in the session's environment`,
        { param: `transport.env_vars[${i}]` },
      );
    }
  }
  const inWorkspace = ctx.workspace !== undefined &&
    (transport.cwd === "/workspace" || transport.cwd.startsWith("/workspace/"));
  const path = inWorkspace ? hostPath(ctx.workspace!, transport.cwd) : transport.cwd;
  let cwd: string;
  try {
    cwd = await guardCwd(state, path);
  } catch (e) {
    if (e instanceof ApiError) throw McpServerError.fromApiError(label, e, "transport.cwd");
    throw e;
  }
  const prefix = ctx.argvPrefix ?? [];
  return { argv: [...prefix, ...argv], cwd, env, timeoutMs: 0 };
}

/**
 * Start a stdio server and connect `client` to it; on failure the process is gone before this
 * rejects. Resolves to the transport (whose `close()` ends the process group).
 */
export async function connectStdio(
  config: McpToolConfig & { transport: StdioTransportConfig },
  ctx: McpContext,
  client: Client,
  timeoutMs: number,
): Promise<ProcessStdioTransport> {
  const label = config.server_label;
  const request = await stdioRequest(label, config.transport, ctx);
  const transport = new ProcessStdioTransport(
    ctx.state,
    ctx.identity.id,
    request,
    `mcp:${label}`,
  );
  try {
    await client.connect(transport, { timeout: timeoutMs });
  } catch (e) {
    await transport.close();
    if (transport.process === undefined) {
      throw McpServerError.fromApiError(label, spawnFailure(e, request), "transport.command");
    }
    throw stdioFailure(label, transport, e, timeoutMs, Object.values(ctx.env ?? {}));
  }
  return transport;
}

/** Why a stdio server did not answer, in words (its stderr's end, secrets removed). */
export function stdioFailure(
  label: string,
  transport: ProcessStdioTransport,
  e: unknown,
  timeoutMs: number,
  secrets: Iterable<string>,
): McpServerError {
  const stderr = redact(transport.stderrTail(), secrets);
  const said = stderr ? `; its stderr ends with: ${stderr}` : "";
  const exit = transport.exit;
  const timedOut = (e as { code?: number })?.code === -32001;
  if (timedOut && !exit) {
    return new McpServerError(
      label,
      "mcp_timeout",
      `the server did not answer within ${timeoutMs / 1000} s${said}`,
      { cause: e },
    );
  }
  if (exit) {
    return new McpServerError(
      label,
      "mcp_unavailable",
      `the server ${describeExit(exit)} before it answered${said}`,
      { cause: e },
    );
  }
  return new McpServerError(
    label,
    "mcp_protocol_error",
    `${redact((e as Error).message, secrets)}${said}`,
    { cause: e },
  );
}
