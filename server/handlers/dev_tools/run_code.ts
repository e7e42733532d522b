/**
 * `POST /code/run`: python, javascript, typescript (through the server's own Deno) and bash.
 * The code goes to a private temp file, runs in its own process group (in the process table, so
 * it can be listed and signalled while it runs, and dies with the server), and the file is
 * removed afterwards.
 *
 * JavaScript and TypeScript run under Deno with **no permissions at all** (`--no-prompt` turns
 * every attempt into an error rather than a prompt): the caller's code gets the language, not
 * the machine. Python and bash are ordinary processes bounded by the command, path and
 * environment guards; bash code passes the command guard like a `shell` string.
 *
 * @module
 */

import { join } from "node:path";
import { z } from "zod";
import { ApiError } from "../../errors.ts";
import { commandRules, guardShellCommand } from "../../guards/commands/index.ts";
import { confinements } from "../../confine/confinement.ts";
import { shell } from "../../process/spawn.ts";
import type { ServerState } from "../../state.ts";
import { DEFAULT_MAX_OUTPUT, guardCwd, guardedEnvironment, readJson } from "../process/request.ts";
import { runToEnd } from "../process/shell.ts";
import type { EndpointHandler } from "../types.ts";

/** The languages, with the names they are also known by. */
const ALIASES: Readonly<Record<string, Language>> = {
  python: "python",
  python3: "python",
  py: "python",
  javascript: "javascript",
  js: "javascript",
  typescript: "typescript",
  ts: "typescript",
  bash: "bash",
  sh: "bash",
  shell: "bash",
};

type Language = "python" | "javascript" | "typescript" | "bash";

const EXTENSIONS: Readonly<Record<Language, string>> = {
  python: ".py",
  javascript: ".js",
  typescript: ".ts",
  bash: ".sh",
};

const RunCodeBody = z.strictObject({
  code: z.string().refine((s) => !s.includes("\0"), "code contains a NUL byte"),
  language: z.string().max(32).optional(),
  timeout: z.number().min(0).max(86400).optional(),
  env: z.unknown().optional(),
  cwd: z.unknown().optional(),
});

/** Default timeout of `run_code` in seconds (the SDK's `run_code` default). */
const DEFAULT_TIMEOUT = 30;

function argvFor(language: Language, file: string): string[] {
  switch (language) {
    case "python":
      return ["python3", "-u", file];
    case "bash":
      return [shell(), file];
    default:
      return [
        Deno.execPath(),
        "run",
        "--no-prompt",
        "--no-config",
        "--no-lock",
        "--quiet",
        file,
      ];
  }
}

/** The language asked for, if the policy's `params.languages` admits it. */
function allowedLanguage(state: ServerState, raw: string | undefined): Language {
  const language = ALIASES[(raw ?? "python").toLowerCase()];
  if (!language || !state.policy.languages.includes(language)) {
    throw new ApiError(
      "language_not_allowed",
      `Language ${raw} is not allowed; allowed: ${state.policy.languages.join(", ")}`,
      { param: "language" },
    );
  }
  return language;
}

/** `POST /code/run`. */
export const runCode: EndpointHandler = async (c) => {
  const state = c.var.state;
  const body = await readJson(c, RunCodeBody);
  const language = allowedLanguage(state, body.language);
  if (language === "bash") guardShellCommand(commandRules(state.policy), body.code, "code");
  // The runtime is a program like any other: allow_commands must admit it (the kernel enforces
  // it too, as the confinement executes only the programs the list admits).
  else {guardShellCommand(
      commandRules(state.policy),
      language === "python" ? "python3" : "deno",
      "language",
    );}
  const env = guardedEnvironment(state, body.env);
  const cwd = await guardCwd(state, body.cwd);
  if (language === "javascript" || language === "typescript") {
    Object.assign(env, { NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" });
  }
  // The confinement's own directory: the one place under the state directory its process reads.
  const dir = confinements(state).scratchDir(c.var.identity.id);
  const file = join(dir, `${crypto.randomUUID()}${EXTENSIONS[language]}`);
  await Deno.writeTextFile(file, body.code, { mode: 0o600 });
  try {
    const result = await runToEnd(
      state,
      c.var.identity.id,
      {
        argv: argvFor(language, file),
        cwd,
        env,
        timeoutMs: (body.timeout ?? DEFAULT_TIMEOUT) * 1000,
      },
      DEFAULT_MAX_OUTPUT,
      c.req.raw.signal,
    );
    return c.json({
      text: result.stdout.trimEnd(),
      stdout: result.stdout,
      stderr: result.stderr,
      exit_code: result.exit_code,
      execution_time: result.execution_time,
      output_files: [],
      language,
      timed_out: result.timed_out,
      stdout_dropped: result.stdout_dropped,
      stderr_dropped: result.stderr_dropped,
    });
  } finally {
    await Deno.remove(file).catch(() => {});
  }
};
