/**
 * What an image has of what a docker sandbox's capabilities depend on beyond the server (`code`:
 * a `python3` that finds `ipykernel`; `browser`: a `chromium`), probed by the start script of the
 * image's first sandbox and kept per image on the host, so that later sandboxes of the image do
 * not run the probe again.
 *
 * The probe starts Python while the server starts beside it: measured, ~14 ms of create to first
 * command (medians of three interleaved rounds of 10, machine shared). Its answer depends only on
 * the image's file system and configuration, which its id (a hash of them) names, and on what the
 * sandbox's own variables change in how `python3` and `chromium` are found and what Python
 * imports (`PATH`, `PYTHON*`), and on volumes, which can put files anywhere: a create with any of
 * those probes again and keeps nothing. An entry is written only from a probe that ran (the
 * image's own start script printed it, before any program of the sandbox's ran) and read only as
 * one of those names; an unreadable one is probed again.
 *
 * The entries are files `$SANDBAR_HOME/docker-probes/<image id's hex>`, holding the names
 * separated by spaces (empty: the image has neither).
 *
 * Entries are pruned when the cache grows: a create that is about to write a new entry asks the
 * engine for its images' ids once, while its container starts (off the create's critical path),
 * and removes the entries of image ids the engine does not have ({@linkcode pruneProbes}). So the
 * directory holds at most one entry per image the engine had at its last growth, plus the one
 * written then. Best effort: an engine that cannot be asked prunes nothing; engines sharing one
 * `$SANDBAR_HOME` prune each other's images' entries, and a pruned entry only costs the next
 * sandbox of its image one probe.
 *
 * @module
 */

import { join } from "node:path";
import { writeAtomic } from "../local/state.ts";

/** The names a probe can find. */
export const PROBED_NAMES: readonly string[] = ["code", "browser"];

const IMAGE_ID = /^sha256:([0-9a-f]{64})$/;
/** Variables that change what the probe finds. */
const PROBE_VARIABLES = /^(PATH|PYTHON.*)$/;

/**
 * The entry's path for a sandbox of image `imageId` with these variables and volumes, or null
 * when the probe's answer may differ from the image's own (then it runs, and nothing is kept).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { probeEntry } from "./probe_cache.ts";
 * const id = `sha256:${"ab".repeat(32)}`;
 * assert.equal(probeEntry("/h", id, { MODE: "x" }, {}), `/h/docker-probes/${"ab".repeat(32)}`);
 * assert.equal(probeEntry("/h", id, { PYTHONPATH: "/opt" }, {}), null);
 * assert.equal(probeEntry("/h", id, {}, { cache: "/cache" }), null);
 * assert.equal(probeEntry("/h", "not-an-id", {}, {}), null);
 * ```
 */
export function probeEntry(
  sandbarHome: string,
  imageId: string,
  envs: Record<string, string>,
  volumes: Record<string, string>,
): string | null {
  const hex = IMAGE_ID.exec(imageId)?.[1];
  if (!hex || Object.keys(volumes).length > 0) return null;
  if (Object.keys(envs).some((name) => PROBE_VARIABLES.test(name))) return null;
  return join(sandbarHome, "docker-probes", hex);
}

/** The names an entry holds, or null when there is none (or it is not one this module wrote). */
export async function readProbe(entry: string): Promise<string[] | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(entry);
  } catch {
    return null;
  }
  const names = text.split(" ").filter((n) => n);
  return names.every((n) => PROBED_NAMES.includes(n)) ? names : null;
}

/**
 * Remove the entries of images whose ids are not in `liveIds` (the engine's images); names that
 * are not an image id's hex are not entries and are left alone. Resolves to the hex names removed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pruneProbes, writeProbe } from "./probe_cache.ts";
 * const home = await Deno.makeTempDir();
 * const [live, gone] = ["aa", "bb"].map((h) => h.repeat(32));
 * await writeProbe(`${home}/docker-probes/${live}`, ["code"]);
 * await writeProbe(`${home}/docker-probes/${gone}`, []);
 * assert.deepEqual(await pruneProbes(home, [`sha256:${live}`]), [gone]);
 * assert.deepEqual(await pruneProbes(home, [live]), []); // an id without its `sha256:`
 * assert.deepEqual([...Deno.readDirSync(`${home}/docker-probes`)].map((e) => e.name), [live]);
 * await Deno.remove(home, { recursive: true });
 * ```
 */
export async function pruneProbes(
  sandbarHome: string,
  liveIds: Iterable<string>,
): Promise<string[]> {
  const live = new Set<string>();
  // With or without the `sha256:` of Docker's answers: an id read without it must not make a
  // live image's entry look stale.
  for (const id of liveIds) {
    const hex = /^(?:sha256:)?([0-9a-f]{64})$/.exec(id)?.[1];
    if (hex) live.add(hex);
  }
  const dir = join(sandbarHome, "docker-probes");
  const removed: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (!/^[0-9a-f]{64}$/.test(entry.name) || live.has(entry.name)) continue;
      await Deno.remove(join(dir, entry.name)).then(() => removed.push(entry.name), () => {});
    }
  } catch { /* no directory yet */ }
  return removed.sort();
}

/** Keep what a probe found (best effort: a cache that cannot be written only costs time). */
export async function writeProbe(entry: string, found: Iterable<string>): Promise<void> {
  const names = [...found].filter((n) => PROBED_NAMES.includes(n)).sort();
  try {
    await Deno.mkdir(join(entry, ".."), { recursive: true, mode: 0o700 });
    await writeAtomic(entry, names.join(" "), 0o600);
  } catch { /* probed again next time */ }
}
