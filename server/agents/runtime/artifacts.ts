/**
 * Artifacts: at the end of each turn, the regular files under the environment's `outputs/`
 * directory that are new or changed since the session last published them become immutable
 * artifacts. Their bytes are copied into the data directory (`artifacts/<id>`), so later edits
 * or deletes in the workspace do not change them. Every directory and file is opened by
 * descriptor without following a link (`files/pinned_dir.ts`), from the workspace down: a
 * session's process that swaps a file or a directory for a link to the store key between the
 * listing and the read gets a refusal, never the key. Each path also passes the policy's path
 * rules. At most
 * {@linkcode ARTIFACT_LIMITS} files and bytes per file are published per turn.
 *
 * @module
 */

import { join, relative } from "node:path";
import type { PinnedDirectory } from "../../files/pinned_dir.ts";
import { decidePath } from "../../guards/paths/index.ts";
import { ApiError } from "../../errors.ts";
import { pinWorkspace } from "../environments/workspace.ts";
import type { ServerState } from "../../state.ts";
import { newId, unixNow } from "../ids.ts";
import type { AgentStore } from "../store.ts";

/** The policy's answer for reading `path` (its rules only: the read goes by descriptor). */
function decideRead(state: ServerState, path: string): void {
  const d = decidePath(state.policy.paths, state.root, path, "read");
  if (!d.allowed) throw new ApiError(d.code!, d.reason, { param: "path" });
}

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
 * The regular files under a pinned directory, as paths relative to it, in name order, at most
 * `budget.n`. Every directory is entered by descriptor (`O_NOFOLLOW`): a link, or a directory
 * swapped for one, is never followed. Listed synchronously: a local directory lists in
 * microseconds, where each asynchronous listing is a hop through the runtime's thread pool.
 */
function files(dir: PinnedDirectory, prefix: string, budget: { n: number }): string[] {
  const out: string[] = [];
  let names: string[];
  try {
    names = dir.names().sort();
  } catch {
    return out;
  }
  for (const name of names) {
    if (budget.n <= 0) break;
    let kind: string;
    try {
      kind = dir.stat(name).kind;
    } catch {
      continue; // gone meanwhile
    }
    if (kind === "directory") {
      let child: PinnedDirectory;
      try {
        child = dir.child(name);
      } catch {
        continue; // swapped for a link or gone: not entered
      }
      try {
        out.push(...files(child, `${prefix}${name}/`, budget));
      } finally {
        child.close();
      }
    } else if (kind === "file") {
      budget.n--;
      out.push(`${prefix}${name}`);
    }
  }
  return out;
}

/**
 * Read `rel` below the pinned `outputs` directory through descriptors only: each directory on
 * the way opened without following a link, the file itself opened `O_NOFOLLOW` and checked by
 * its own `statx` (a regular file with one name, within the limit). Null when any of that fails:
 * a link swapped in for the file or a directory on its way is refused, never read through.
 */
function readBelow(outputs: PinnedDirectory, rel: string): Uint8Array<ArrayBuffer> | null {
  const parts = rel.split("/");
  const name = parts.pop()!;
  const opened: PinnedDirectory[] = [];
  try {
    let dir = outputs;
    for (const part of parts) {
      dir = dir.child(part);
      opened.push(dir);
    }
    return dir.readFile(name, ARTIFACT_LIMITS.bytes).bytes;
  } catch {
    return null;
  } finally {
    for (const d of opened) d.close();
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
  let outputs: PinnedDirectory | null = null;
  try {
    const workspace = pinWorkspace(state, session.environmentId);
    if (!workspace) return []; // no descriptors here: nothing is read by name instead
    try {
      outputs = workspace.child("outputs");
    } finally {
      workspace.close();
    }
  } catch {
    return []; // no outputs directory (or a link in its place): nothing to publish
  }
  try {
    return await publishFrom(state, store, dataDir, session, turnId, outputs);
  } finally {
    outputs.close();
  }
}

async function publishFrom(
  state: ServerState,
  store: AgentStore,
  dataDir: string,
  session: { id: string; environmentId: string; workspace: string },
  turnId: string,
  outputs: PinnedDirectory,
): Promise<Record<string, unknown>[]> {
  const paths = files(outputs, "", { n: ARTIFACT_LIMITS.files });
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
  for (const rel of paths) {
    const path = join(session.workspace, "outputs", rel);
    try {
      // The policy's say on the path (`paths.deny`, read rights); the read itself is below.
      decideRead(state, path);
    } catch {
      continue; // refused by the guard: not published
    }
    const bytes = readBelow(outputs, rel);
    if (bytes === null) continue; // a link, not a regular file, too large, or gone
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
