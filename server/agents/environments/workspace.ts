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

/** The host path of a `/workspace/…` path. */
export function hostPath(workspace: string, path: string): string {
  return join(workspace, path.slice("/workspace/".length));
}

/** Create the workspace directory, through the path guard. */
export async function createWorkspace(state: ServerState, workspace: string): Promise<void> {
  const guarded = resolveGuardedPath(state, workspace, "write", "environment");
  await Deno.mkdir(guarded.path, { recursive: true });
}

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
  await Deno.mkdir(dirname(guarded.path), { recursive: true });
  const st = await writeAtomically(guarded.path, body, { overwrite: true, param: `${param}.path` });
  return st.size;
}
