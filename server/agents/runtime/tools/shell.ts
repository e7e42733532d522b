/**
 * The `shell` tool, in the shape Codex-trained models use:
 * `{command: string[] | string, workdir?: string, timeout_ms?: number}`. An array is the argv;
 * a string runs through `bash -lc`. It runs through the server's own process layer (the entry
 * `POST /process/shell` uses, so the same process groups, limits and confinement), in the
 * session's environment, under the policy of the identity that owns the session: its
 * `process:run` scope, the `shell` endpoint being on, the command guard, the environment guard
 * and the path guard on the working directory.
 *
 * The call is a `command_execution` item, added before the arguments are read (a bad call is a
 * failed item with the error as its `output`); the tool declares it and the registry
 * (`registry.ts`) keeps it, checks the policy and audits a guard's refusal. What the execution
 * adds of its own: the process's output, as `agent.output.command_execution_output.delta`
 * events on that item as the process writes it.
 *
 * @module
 */

import type { ActionPolicy } from "../../../policy/on_behalf.ts";
import { commandRules, guardArgv, guardShellCommand } from "../../../guards/commands/index.ts";
import { guardCwd, guardedEnvironment, spawnShell } from "../../../process/start.ts";
import { TailBuffer } from "../../../../shared/tail_buffer.ts";
import { shell as shellPath } from "../../../process/process_group.ts";
import { loginShellPrelude, withVenv } from "../../environments/python_venv.ts";
import type { FunctionToolDefinition } from "../model/model.ts";
import { hostPath } from "../../environments/workspace.ts";
import {
  ArgumentsError,
  parseArguments,
  type Tool,
  type ToolContext,
  ToolError,
  type ToolProvider,
  type ToolResult,
} from "./tool.ts";

/** Default and longest time a command may run. */
export const SHELL_TIMEOUT_MS = { default: 10 * 60_000, max: 60 * 60_000 };

/** How much output the item keeps, and the model reads (the end of it). */
export const SHELL_OUTPUT_BYTES = { item: 1024 * 1024, model: 64 * 1024 };

/** What a call needs of the owner's policy: what `POST /process/shell` needs. */
const SHELL_POLICY: ActionPolicy = {
  scope: "process:run",
  doing: "Running commands",
  endpoint: "shell",
};

const DEFINITION: FunctionToolDefinition = {
  type: "function",
  name: "shell",
  description: "Runs a shell command in the workspace and returns its output. " +
    "`command` is an argv array, or a string run by `bash -lc`.",
  parameters: {
    type: "object",
    properties: {
      command: {
        anyOf: [{ type: "array", items: { type: "string" } }, { type: "string" }],
        description: "The command: an argv array, or a string for bash -lc.",
      },
      workdir: { type: "string", description: "The working directory (default the workspace)." },
      timeout_ms: { type: "number", description: "Milliseconds before the command is killed." },
    },
    required: ["command"],
    additionalProperties: false,
  },
};

interface ShellArgs {
  command: string[] | string;
  workdir?: string;
  timeout_ms?: number;
}

function shellArgs(text: string): ShellArgs {
  const a = parseArguments(text);
  for (const k of Object.keys(a)) {
    if (!["command", "workdir", "timeout_ms"].includes(k)) {
      throw new ArgumentsError(`unknown argument '${k}' (expected command, workdir, timeout_ms)`);
    }
  }
  const c = a.command;
  const isArgv = Array.isArray(c) && c.length > 0 && c.every((x) => typeof x === "string");
  if (!isArgv && (typeof c !== "string" || c.trim() === "")) {
    throw new ArgumentsError("'command' must be a non-empty array of strings or a string");
  }
  if (a.workdir !== undefined && typeof a.workdir !== "string") {
    throw new ArgumentsError("'workdir' must be a string");
  }
  const t = a.timeout_ms;
  if (t !== undefined && (typeof t !== "number" || !(t > 0))) {
    throw new ArgumentsError("'timeout_ms' must be a positive number");
  }
  return a as unknown as ShellArgs;
}

/** How the command reads in the item: the string, or the argv quoted for a shell. */
function displayed(command: string[] | string): string {
  if (typeof command === "string") return command;
  return command.map((w) => /^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replaceAll("'", `'\\''`)}'`)
    .join(" ");
}

/** The working directory on this machine. */
function workdirPath(context: ToolContext, workdir: string | undefined): string {
  const workspace = context.environment!.workspace;
  if (workdir === undefined || workdir === "" || workdir === "/workspace") return workspace;
  if (workdir.startsWith("/workspace/")) return hostPath(workspace, workdir);
  if (workdir.startsWith("/")) return workdir;
  return `${workspace}/${workdir}`;
}

/** A command runs as `POST /process/shell` would, for the session's owner. */
const SHELL: Tool<ShellArgs> = {
  policy: SHELL_POLICY,
  prepare: (call) => shellArgs(call.arguments),
  item: {
    at: "call",
    fields: (call, args) => ({
      type: "command_execution",
      command: args ? displayed(args.command) : call.arguments,
      cwd: null,
      duration_ms: null,
      exit_code: null,
      output: null,
    }),
    answerIn: "output",
  },
  // A spawn that fails for a reason no guard gave (a missing program, a full process table).
  failureCode: "sandbox_error",
  run: runShell,
};

/** Run one command, its output going out as deltas on the call's item. */
async function runShell(args: ShellArgs, context: ToolContext): Promise<ToolResult> {
  if (!context.environment) {
    throw new ToolError("sandbox_error", "this session has no environment to run commands in");
  }
  const started = performance.now();
  const rules = commandRules(context.state.policy);
  const inner = typeof args.command === "string"
    ? [
      shellPath(),
      "-lc",
      loginShellPrelude(context.environment.venv) +
      guardShellCommand(rules, args.command, "command"),
    ]
    : guardArgv(rules, args.command, "command");
  const cwd = await guardCwd(context.state, workdirPath(context, args.workdir));
  const env = withVenv(
    guardedEnvironment(context.state, context.environment.env),
    context.environment.venv,
  );
  const timeoutMs = Math.min(args.timeout_ms ?? SHELL_TIMEOUT_MS.default, SHELL_TIMEOUT_MS.max);
  const out = new TailBuffer(SHELL_OUTPUT_BYTES.item);
  const decoder = new TextDecoder();
  const entry = spawnShell(
    context.state,
    context.identity!.id,
    { argv: [...context.environment.networkPrefix, ...inner], cwd, env, timeoutMs },
    (_type, bytes) => {
      out.push(bytes);
      const delta = decoder.decode(bytes, { stream: true });
      if (delta !== "") {
        context.recorder.emit({
          type: "agent.output.command_execution_output.delta",
          item_id: context.item.id,
          output_index: context.item.index,
          delta,
        });
      }
    },
  );
  const kill = () => entry.process.kill("SIGKILL");
  context.signal.addEventListener("abort", kill, { once: true });
  let exit;
  try {
    exit = await entry.process.exited;
  } finally {
    context.signal.removeEventListener("abort", kill);
  }
  const output = out.text();
  context.attributes["process.command_line"] = displayed(args.command);
  context.attributes["process.exit.code"] = exit.exitCode;
  const duration = Math.round(performance.now() - started);
  const shown = output.length > SHELL_OUTPUT_BYTES.model
    ? `[${output.length - SHELL_OUTPUT_BYTES.model} earlier characters left out]\n` +
      output.slice(-SHELL_OUTPUT_BYTES.model)
    : output;
  const timedOut = exit.timedOut ? " (killed: timeout)" : "";
  return {
    output: `Exit code: ${exit.exitCode}${timedOut}\nWall time: ${
      (duration / 1000).toFixed(1)
    } seconds\nOutput:\n${shown}`,
    status: context.signal.aborted ? "incomplete" : "completed",
    record: { cwd, duration_ms: duration, exit_code: exit.exitCode, output },
  };
}

/** The `shell` tool. */
export class ShellTool implements ToolProvider {
  /** Offered only with an environment. */
  definitions(): FunctionToolDefinition[] {
    return [DEFINITION];
  }

  /** Calls to `shell`. */
  tool(name: string): Tool<ShellArgs> | undefined {
    return name === "shell" ? SHELL : undefined;
  }
}
