/**
 * Artifacts: at the end of each turn, the regular files under the environment's `outputs/`
 * directory that are new or changed since the session last published them become immutable
 * artifacts. Their bytes are copied into the data directory (`artifacts/<id>`), so later edits
 * or deletes in the workspace do not change them. Links are not followed (a link to a file
 * outside would otherwise publish it) and every file is read through the path guard. At most
 * {@linkcode ARTIFACT_LIMITS} files and bytes per file are published per turn.
 *
 * @module
 */

import { join, relative } from "node:path";
import { resolveGuardedPath } from "../../guards/paths/resolve.ts";
import type { ServerState } from "../../state.ts";
import { newId, unixNow } from "../ids.ts";
import type { AgentStore } from "../store.ts";

/** Limits of one publication. */
export const ARTIFACT_LIMITS = { files: 1000, bytes: 256 * 1024 * 1024 };

/** Where an artifact's bytes are kept. */
export function artifactContentPath(dataDir: string, artifactId: string): string {
  return join(dataDir, "artifacts", artifactId);
}

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The regular files under `dir`, in name order, at most `budget.n`. Listed synchronously: a
 * local directory lists in microseconds, where each asynchronous listing or stat is a hop
 * through the runtime's thread pool that every turn's end waited for, publishing or not.
 */
function* files(dir: string, budget: { n: number }): Generator<string> {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch {
    return;
  }
  entries.sort((a, b) => a.name < b.name ? -1 : 1);
  for (const e of entries) {
    if (budget.n <= 0) return;
    const path = join(dir, e.name);
    if (e.isSymlink) continue;
    if (e.isDirectory) yield* files(path, budget);
    else if (e.isFile) {
      budget.n--;
      yield path;
    }
  }
}

/** Publish what changed under `<workspace>/outputs`; returns the new artifacts. */
export async function publishArtifacts(
  state: ServerState,
  store: AgentStore,
  dataDir: string,
  session: { id: string; environmentId: string; workspace: string },
  turnId: string,
): Promise<Record<string, unknown>[]> {
  const outputs = join(session.workspace, "outputs");
  let found: Deno.FileInfo | null = null;
  try {
    found = Deno.lstatSync(outputs);
  } catch { /* no outputs directory: nothing to publish */ }
  if (!found?.isDirectory) return [];
  const paths = [...files(outputs, { n: ARTIFACT_LIMITS.files })];
  if (paths.length === 0) return [];
  const latest = new Map<string, string>();
  for (
    const row of store.prepared(
      "SELECT body FROM objects WHERE kind = 'artifact' AND parent = ? ORDER BY seq",
    ).all(session.id) as { body: string }[]
  ) {
    const b = JSON.parse(row.body);
    latest.set(b.path, b._sha256);
  }
  const made: Record<string, unknown>[] = [];
  for (const path of paths) {
    let bytes: Uint8Array<ArrayBuffer>;
    try {
      const g = resolveGuardedPath(state, path, "read", "path", { followFinal: false });
      if (!g.stat?.isFile || g.stat.size > ARTIFACT_LIMITS.bytes) continue;
      bytes = await Deno.readFile(g.path);
    } catch {
      continue; // refused by the guard, or gone meanwhile: not published
    }
    const apiPath = `/workspace/${relative(session.workspace, path)}`;
    const digest = await sha256(bytes);
    if (latest.get(apiPath) === digest) continue;
    const id = newId("artifact");
    if (made.length === 0) {
      await Deno.mkdir(join(dataDir, "artifacts"), { recursive: true, mode: 0o700 });
    }
    await Deno.writeFile(artifactContentPath(dataDir, id), bytes, { mode: 0o600 });
    const artifact = {
      id,
      object: "agent.session.artifact",
      created_at: unixNow(),
      environment_id: session.environmentId,
      session_id: session.id,
      turn_id: turnId,
      path: apiPath,
      size_bytes: bytes.length,
      _sha256: digest,
    };
    store.insert("artifact", id, session.id, artifact.created_at, artifact, null);
    made.push(artifact);
  }
  return made;
}
