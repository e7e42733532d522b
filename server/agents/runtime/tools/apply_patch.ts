/**
 * The `apply_patch` tool, `{input: string}` in the Codex patch format (see `patch.ts`). Every
 * path goes through the path guard (`paths.allow`, `deny`, `read_only`, links) under the
 * policy of the identity that owns the session, which needs `files:write`; relative paths and
 * `/workspace/…` are the environment's workspace.
 *
 * All files of a patch or none: every file is read and every change computed and checked
 * before anything is written; then each file is written atomically (a temp file renamed into
 * place). Should a write still fail, the files already written are put back as they were.
 *
 * The call is recorded as a `function_call` item (added before the arguments are read) and a
 * `function_call_output` item that carries the answer or the error, since the API has no item
 * type of its own for file edits; the tool declares both and the registry (`registry.ts`) adds
 * them, checks `files:write` and audits a guard's refusal.
 *
 * @module
 */

import { dirname, isAbsolute, join } from "node:path";
import { ApiError } from "../../../errors.ts";
import { makeDirectories, removeEntry } from "../../../files/entry_ops.ts";
import { LibcCallError, PinnedDirectory, UnreadableFileError } from "../../../files/pinned_dir.ts";
import { writeAtomically } from "../../../files/atomic_write.ts";
import { resolveGuardedPath } from "../../../guards/paths/resolve.ts";
import type { ServerState } from "../../../state.ts";
import { hostPath } from "../../environments/workspace.ts";
import type { FunctionToolDefinition } from "../model/model.ts";
import { applyChunks, parsePatch, PatchError } from "./patch.ts";
import {
  ArgumentsError,
  functionCallFields,
  parseArguments,
  type Tool,
  type ToolProvider,
} from "./tool.ts";

const DEFINITION: FunctionToolDefinition = {
  type: "function",
  name: "apply_patch",
  description: "Edits files with a patch in the apply_patch format: '*** Begin Patch', then " +
    "'*** Add File: <path>' (lines prefixed '+'), '*** Delete File: <path>', or " +
    "'*** Update File: <path>' (optionally '*** Move to: <path>') with '@@' chunks of ' ' " +
    "context, '-' removed and '+' added lines, then '*** End Patch'. Paths are relative to " +
    "the workspace. All files change, or none.",
  parameters: {
    type: "object",
    properties: { input: { type: "string", description: "The whole patch." } },
    required: ["input"],
    additionalProperties: false,
  },
};

/** One file's planned change: its path on disk and its bytes after (null: removed). */
interface FileChange {
  path: string;
  shown: string;
  after: Uint8Array | null;
  before: Uint8Array | null;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function onDisk(workspace: string, path: string): string {
  if (path === "/workspace" || path.startsWith("/workspace/")) return hostPath(workspace, path);
  return isAbsolute(path) ? path : join(workspace, path);
}

/** The most a patched file may hold. */
const MAX_PATCHED_BYTES = 64 * 1024 * 1024;

/**
 * A file's bytes, or null when it does not exist. The guard decides on the path; the read goes
 * by descriptor in one kernel lookup (`files/pinned_dir.ts`) that refuses a link in any component
 * (unless the policy allows links) and always a final one: a file swapped for a link to the store
 * key after the guard looked is refused, never read.
 */
function readGuarded(state: ServerState, path: string): Uint8Array | null {
  const g = resolveGuardedPath(state, path, "read", "input");
  if (!g.exists) return null;
  if (!g.stat?.isFile) throw new PatchError(`${path} is not a regular file`);
  let read;
  try {
    read = PinnedDirectory.readWithoutLinks(g.path, MAX_PATCHED_BYTES, NO_LINKS);
  } catch (e) {
    if (e instanceof LibcCallError && e.code === "ENOENT") return null;
    if (e instanceof LibcCallError && e.code === "ELOOP") {
      throw new ApiError(
        "symlink_denied",
        `${path} passes through a link (or changed while it was read); apply_patch follows none`,
        { param: "input" },
      );
    }
    if (e instanceof UnreadableFileError) throw new PatchError(`${path}: ${e.message}`);
    throw e;
  }
  if (!read) {
    throw new ApiError("internal", "apply_patch needs descriptor-based reads (Linux 5.6 or later)");
  }
  return read.bytes;
}

/**
 * The agent runtime's own file operations never pass through a link, whatever `paths.symlinks`
 * allows the file endpoints: under `allow`, a directory swapped for a link to the data directory
 * between the guard's look and the use would otherwise be followed.
 */
const NO_LINKS = true;

/** Read everything and compute every change; nothing is written. */
function plan(state: ServerState, workspace: string, input: string): FileChange[] {
  const changes = new Map<string, FileChange>();
  const current = (path: string) => {
    const planned = changes.get(path);
    if (planned) return planned.after;
    return readGuarded(state, path);
  };
  const set = (path: string, shown: string, after: Uint8Array | null) => {
    const g = resolveGuardedPath(state, path, after === null ? "delete" : "write", "input");
    const before = changes.get(g.path)?.before ?? readGuarded(state, g.path);
    changes.set(g.path, { path: g.path, shown, after, before });
  };
  for (const op of parsePatch(input)) {
    const path = onDisk(workspace, op.path);
    if (op.type === "add") {
      set(path, op.path, encoder.encode(op.content));
    } else if (op.type === "delete") {
      if (current(path) === null) {
        throw new PatchError(`Delete File ${op.path}: no such file`);
      }
      set(path, op.path, null);
    } else {
      const before = current(path);
      if (before === null) throw new PatchError(`Update File ${op.path}: no such file`);
      const after = encoder.encode(applyChunks(decoder.decode(before), op.chunks, op.path));
      if (op.moveTo !== null) {
        set(path, op.path, null);
        set(onDisk(workspace, op.moveTo), op.moveTo, after);
      } else {
        set(path, op.path, after);
      }
    }
  }
  return [...changes.values()];
}

async function write(state: ServerState, path: string, bytes: Uint8Array | null): Promise<void> {
  if (bytes === null) {
    const g = resolveGuardedPath(state, path, "delete", "input");
    // Unlinked in its directory held by descriptor: a directory on the way swapped for a link
    // cannot make it remove a file elsewhere (the store key).
    if (g.exists) {
      await removeEntry(g.path, {
        directory: false,
        recursive: false,
        noSymlinks: NO_LINKS,
        param: "input",
      });
    }
    return;
  }
  let g = resolveGuardedPath(state, path, "write", "input");
  if (g.ancestor.path !== dirname(g.path)) {
    await makeDirectories(g.ancestor.path, dirname(g.path), NO_LINKS);
    g = resolveGuardedPath(state, path, "write", "input");
  }
  await writeAtomically(g.path, new Response(bytes as Uint8Array<ArrayBuffer>).body!, {
    overwrite: true,
    directory: g.ancestor.stat,
    noSymlinks: NO_LINKS,
    param: "input",
  });
}

/** Write every change; on a failure, put back the files already changed, then rethrow. */
async function commit(state: ServerState, changes: FileChange[]): Promise<void> {
  const done: FileChange[] = [];
  try {
    for (const c of changes) {
      await write(state, c.path, c.after);
      done.push(c);
    }
  } catch (e) {
    for (const c of done.reverse()) await write(state, c.path, c.before).catch(() => {});
    throw e;
  }
}

/** An edit needs the owner's `files:write`. */
const APPLY_PATCH: Tool<string> = {
  policy: { scope: "files:write", doing: "Editing files" },
  prepare: (call) => {
    const args = parseArguments(call.arguments, "invalid_patch");
    if (typeof args.input !== "string") {
      throw new ArgumentsError("'input' must be a string", "invalid_patch");
    }
    return args.input;
  },
  item: {
    at: "call",
    fields: functionCallFields,
    answerIn: "function_call_output",
  },
  // A write the kernel refused for a reason no guard gave (a full disk, a read-only mount).
  failureCode: "sandbox_error",
  run: async (input, context) => {
    if (!context.environment) throw new PatchError("this session has no environment");
    const changes = plan(context.state, context.environment.workspace, input);
    await commit(context.state, changes);
    const lines = changes.map((c) =>
      `${c.after === null ? "D" : c.before === null ? "A" : "M"} ${c.shown}`
    );
    context.attributes["files.changed"] = changes.length;
    return { output: `Success. Updated the following files:\n${lines.join("\n")}\n` };
  },
};

/** The `apply_patch` tool. */
export class ApplyPatchTool implements ToolProvider {
  /** Offered only with an environment. */
  definitions(): FunctionToolDefinition[] {
    return [DEFINITION];
  }

  /** Calls to `apply_patch`. */
  tool(name: string): Tool<string> | undefined {
    return name === "apply_patch" ? APPLY_PATCH : undefined;
  }
}
