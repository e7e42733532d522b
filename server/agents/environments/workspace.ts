/**
 * An environment's workspace: a directory under the server's root,
 * `<root>/agent-environments/<environment_id>`, that stands for `/workspace` in the paths the
 * API uses. Files are written through the path guard (so `paths.deny` and `read_only` apply)
 * and atomically.
 *
 * @module
 */

import { dirname, join } from "node:path";
import { writeAtomically } from "../../files/atomic_write.ts";
import { makeDirectories } from "../../files/entry_ops.ts";
import { PinnedDirectory } from "../../files/pinned_dir.ts";
import { resolveGuardedPath } from "../../guards/paths/resolve.ts";
import type { ServerState } from "../../state.ts";
import { notFound } from "../errors.ts";
import { fileContentPath } from "../domain/files.ts";
import type { EnvironmentFileParam } from "../schemas/environments.ts";
import type { AgentsCore } from "../core.ts";

/** The directory under the root that holds every environment's workspace. */
export const ENVIRONMENTS_DIR = "agent-environments";

/** The workspace directory of an environment. */
export function workspaceDir(state: ServerState, environmentId: string): string {
  return join(state.root, ENVIRONMENTS_DIR, environmentId);
}

/**
 * An environment's workspace held open by descriptor, for reads a session's processes must not
 * redirect: the server's root (the operator's own path, resolved), then `agent-environments` and
 * the environment's directory, each opened without following a link, so a directory swapped for
 * a link to the data directory is refused rather than entered. Null when descriptors are not
 * available here; `LibcCallError` (`ELOOP`, `ENOTDIR`, `ENOENT`) when the workspace is not there
 * as a plain directory.
 */
export function pinWorkspace(state: ServerState, environmentId: string): PinnedDirectory | null {
  const root = PinnedDirectory.open(Deno.realPathSync(state.root), false);
  if (!root) return null;
  try {
    const environments = root.child(ENVIRONMENTS_DIR);
    try {
      return environments.child(environmentId);
    } finally {
      environments.close();
    }
  } finally {
    root.close();
  }
}

/** The host path of a `/workspace/…` path. */
export function hostPath(workspace: string, path: string): string {
  return join(workspace, path.slice("/workspace/".length));
}

/**
 * Create the workspace directory, through the path guard; each missing directory is made in
 * its parent held by descriptor, so `agent-environments` swapped for a link cannot make the
 * workspace appear elsewhere.
 */
export async function createWorkspace(state: ServerState, workspace: string): Promise<void> {
  const guarded = resolveGuardedPath(state, workspace, "write", "environment");
  if (guarded.ancestor.path === guarded.path) return;
  await makeDirectories(guarded.ancestor.path, guarded.path, NO_LINKS, "environment");
}

/**
 * The agent runtime's own file operations never pass through a link, whatever `paths.symlinks`
 * allows the file endpoints: under `allow`, a directory swapped for a link to the data directory
 * between the guard's look and the use would otherwise be followed.
 */
const NO_LINKS = true;

/** The bytes of a file parameter, as a stream, with the size when known. */
export async function fileSource(
  service: AgentsCore,
  file: EnvironmentFileParam,
  param: string,
  owner: string,
): Promise<{ body: ReadableStream<Uint8Array>; size: number }> {
  if (file.type === "inline") {
    const bytes = Uint8Array.from(atob(file.data), (ch) => ch.charCodeAt(0));
    return { body: new Response(bytes).body!, size: bytes.length };
  }
  const stored = service.store.get("file", file.file_id, "", owner);
  if (!stored) throw notFound("file", file.file_id, `${param}.file_id`);
  const handle = await Deno.open(fileContentPath(service, file.file_id));
  return { body: handle.readable, size: stored.body.bytes as number };
}

/** Write one file into the workspace; returns its size. */
export async function materialise(
  state: ServerState,
  service: AgentsCore,
  workspace: string,
  file: EnvironmentFileParam,
  param: string,
  owner: string,
): Promise<number> {
  const target = hostPath(workspace, file.path);
  const guarded = resolveGuardedPath(state, target, "write", `${param}.path`);
  const { body } = await fileSource(service, file, param, owner);
  // Directories made, and the file written, in their parents held by descriptor: what a
  // session's process swaps in meanwhile (a link to the data directory) is refused.
  try {
    if (guarded.ancestor.path !== dirname(guarded.path)) {
      await makeDirectories(
        guarded.ancestor.path,
        dirname(guarded.path),
        NO_LINKS,
        `${param}.path`,
      );
    }
  } catch (e) {
    await body.cancel().catch(() => {});
    throw e;
  }
  const st = await writeAtomically(guarded.path, body, {
    overwrite: true,
    param: `${param}.path`,
    noSymlinks: NO_LINKS,
  });
  return st.size;
}
