/**
 * `GET /git/status` and `GET /git/diff`, with real git on a repository inside the allowed paths.
 *
 * A repository's own configuration must not make these read-only endpoints run a program or
 * write: git runs with `core.fsmonitor=false`, every configured `filter.<name>` driver replaced by
 * `cat` (git would run clean filters to compare files), no external diff or textconv drivers,
 * submodules ignored (they have configurations of their own), optional locks off, literal
 * pathspecs, and no prompts.
 *
 * @module
 */

import { dirname, resolve } from "node:path";
import type { Context } from "hono";
import { ApiError } from "../../errors.ts";
import { guardPath, resolveGuardedPath } from "../../guards/paths/resolve.ts";
import { environmentStore } from "../../process/environment.ts";
import { type CapturedRun, runCaptured } from "../../process/run.ts";
import type { ServerEnv, ServerState } from "../../state.ts";
import type { EndpointHandler } from "../../pipeline/handler.ts";
import { confinements } from "../../confine/confinement.ts";
import type { Spawner } from "../../confine/spawner.ts";
import { parseNumstat, parseStatus } from "./git_parse.ts";
import { queryBool, queryInt } from "../../request_reader.ts";
import {
  enclosingRepository,
  GIT_SAFETY_OPTIONS,
  gitEnvironment,
  linkedPaths,
  refuseRunningConfig,
} from "./git_safety.ts";

const GIT_TIMEOUT_MS = 30000;

/** A repository the guards admitted. */
interface Repository {
  /** The folder asked about (the guarded `path`). */
  path: string;
  /** Its top folder. */
  top: string;
  /** The environment git runs with. */
  env: Record<string, string>;
  /** `-c` options that switch off what could run a program. */
  safety: string[];
  /** The confined thread git starts on (none where the kernel cannot confine). */
  spawner?: Spawner;
}

type GitRun = { path: string; env: Record<string, string>; spawner?: Spawner };

async function git(repo: GitRun, args: string[], head = 0) {
  try {
    const { path: cwd, env, spawner } = repo;
    return await runCaptured(
      { argv: ["git", ...args], cwd, env, timeoutMs: GIT_TIMEOUT_MS, spawner },
      head || 16 << 20,
      head ? "head" : "tail",
    );
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new ApiError("not_found", "git is not installed on this machine");
    }
    throw e;
  }
}

function failed(r: CapturedRun, what: string): ApiError {
  const message = r.stderr.trim().split("\n").at(-1) || `git ${what} failed`;
  if (r.exit.timedOut) return new ApiError("timeout", `git ${what} took too long`);
  return new ApiError("invalid_arguments", `git ${what}: ${message}`);
}

/** The guarded repository of the request's `path` query parameter. */
async function openRepository(c: Context<ServerEnv>): Promise<Repository> {
  const state: ServerState = c.var.state;
  const g = resolveGuardedPath(state, c.req.query("path") ?? state.root, "read", "path");
  if (!g.exists) throw new ApiError("not_found", `${g.path} does not exist`);
  const st = await Deno.stat(g.path);
  const path = st.isDirectory ? g.path : dirname(g.path);
  const identity = c.var.identity.id;
  const confined = confinements(state);
  const env = gitEnvironment(
    environmentStore(state).forProcess(),
    confined.scratchDir(identity, "git"),
  );
  const run: GitRun = { path, env, spawner: confined.spawner(identity, "git") ?? undefined };
  const where = await git(run, [
    ...GIT_SAFETY_OPTIONS,
    "rev-parse",
    "--show-toplevel",
    "--absolute-git-dir",
    "--git-common-dir",
  ]);
  if (where.exit.exitCode !== 0) {
    // A repository the confinement kept git from reading is refused as the guard would.
    const outer = enclosingRepository(path);
    if (outer !== null) {
      guardPath(state, outer, "read", "path");
      const dotGit = `${outer}/.git`;
      for (const p of await linkedPaths(dotGit, dotGit)) guardPath(state, p, "read", "path");
    }
    throw new ApiError("not_found", `${path} is not inside a git repository`);
  }
  const [top, gitDir, common] = where.stdout.trim().split("\n");
  const commonDir = resolve(path, common ?? gitDir);
  // The repository must lie inside the allowed paths as a whole, not just the folder asked.
  for (const p of [top, gitDir, commonDir, ...await linkedPaths(gitDir, commonDir)]) {
    guardPath(state, p, "read", "path");
  }
  const config = await git(run, [...GIT_SAFETY_OPTIONS, "config", "-z", "--list"]);
  refuseRunningConfig(config.stdout);
  const filters = await git(run, [
    "config",
    "-z",
    "--name-only",
    "--get-regexp",
    "^filter\\.",
  ]);
  const names = new Set(
    filters.stdout.split("\0").map((k) => /^filter\.(.+)\.[^.]+$/.exec(k)?.[1]).filter((n) =>
      n !== undefined
    ),
  );
  const safety = [...GIT_SAFETY_OPTIONS];
  for (const name of names) {
    safety.push(
      "-c",
      `filter.${name}.clean=cat`,
      "-c",
      `filter.${name}.smudge=cat`,
      "-c",
      `filter.${name}.process=`,
    );
  }
  return { path, top, env, safety, spawner: run.spawner };
}

/** `GET /git/status`. */
export const gitStatus: EndpointHandler = async (c) => {
  const repo = await openRepository(c);
  const r = await git(repo, [
    ...repo.safety,
    "status",
    "--porcelain=v2",
    "--branch",
    "-z",
    "--ignore-submodules=all",
    "--untracked-files=all",
  ]);
  if (r.exit.exitCode !== 0) throw failed(r, "status");
  const status = parseStatus(r.stdout);
  return c.json({ path: repo.path, repository: repo.top, ...status });
};

/** A revision name: no option (`-x`), no whitespace, only characters revisions use. */
const REF = /^(?!-)[A-Za-z0-9._/~^@{}:+-]{1,256}$/;

/** `GET /git/diff`. */
export const gitDiff: EndpointHandler = async (c) => {
  const state = c.var.state;
  const staged = queryBool(c, "staged", false);
  const ref = c.req.query("ref");
  if (ref !== undefined && !REF.test(ref)) {
    throw new ApiError("invalid_arguments", `ref ${JSON.stringify(ref)} is not a revision`, {
      param: "ref",
    });
  }
  const maxBytes = queryInt(c, "max_bytes", 1 << 20, 1, 16 << 20);
  const repo = await openRepository(c);
  const file = c.req.query("file");
  const pathspec = file === undefined
    ? []
    : ["--", guardPath(state, resolve(repo.path, file), "read", "file")];
  const args = [
    ...repo.safety,
    "diff",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--ignore-submodules=all",
    ...(staged ? ["--cached"] : []),
    ...(ref ? [ref] : []),
  ];
  const [numstat, text] = await Promise.all([
    git(repo, [...args, "--numstat", "-z", ...pathspec]),
    git(repo, [...args, ...pathspec], maxBytes),
  ]);
  if (numstat.exit.exitCode !== 0) throw failed(numstat, "diff");
  if (text.exit.exitCode !== 0) throw failed(text, "diff");
  return c.json({
    path: repo.path,
    repository: repo.top,
    diff: text.stdout,
    files: parseNumstat(numstat.stdout),
    truncated: text.stdoutDropped > 0,
  });
};
