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

/** Keep what a probe found (best effort: a cache that cannot be written only costs time). */
export async function writeProbe(entry: string, found: Iterable<string>): Promise<void> {
  const names = [...found].filter((n) => PROBED_NAMES.includes(n)).sort();
  try {
    await Deno.mkdir(join(entry, ".."), { recursive: true, mode: 0o700 });
    await writeAtomic(entry, names.join(" "), 0o600);
  } catch { /* probed again next time */ }
}
