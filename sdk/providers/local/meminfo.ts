/**
 * `/proc/meminfo` as a local sandbox should show it: its memory limit as the total, what its
 * cgroup uses as used, so `free`, `top`, psutil and every program that sizes itself by the memory
 * it sees, see the sandbox's `memory` rather than the host's.
 *
 * The kernel does not virtualise `/proc/meminfo` (LXCFS does it with a FUSE file system); here the
 * supervisor writes the file from the cgroup's counters every 500 ms (a program may see a value up
 * to that old), and bubblewrap binds it read-only over `/proc/meminfo` inside. The file keeps one
 * size (every number padded to one width) and is rewritten in place, so a bind mount, which holds
 * the inode, shows each new version and a reader never finds it empty.
 *
 * Fields: `MemTotal` the limit; `MemFree` what a program may still take: the limit less the
 * cgroup's use, and no more than what the programs' `work` cgroup has left (the server's reserve,
 * `cgroup_reserve.ts`, is not theirs: `free` shows it as used); `MemAvailable` that plus the page
 * cache the kernel can reclaim (active and inactive file pages); `Cached`, `Shmem`,
 * `Active`/`Inactive` and their anonymous and file parts, `AnonPages`, `Mapped`, `Dirty`,
 * `Writeback` from `memory.stat`; no swap (the limit counts swap, which is kept at none).
 *
 * @module
 */

import { join } from "node:path";

/** The file's name in the sandbox's channel directory (read-only inside). */
export const MEMINFO_FILE = "meminfo";

/** A sandbox's memory, in bytes, as its cgroup counts it. */
export interface MemoryView {
  /** The limit. */
  limit: number;
  /** In use (page cache included). */
  usage: number;
  /** `memory.stat`, by the v2 names: anon, file, shmem, active_file, … */
  stat: Record<string, number>;
}

/** What the sandbox's programs may still take: their `work` cgroup's limit and use. */
export interface ProgramsShare {
  /** `work`'s limit. */
  limit: number;
  /** `work`'s use. */
  usage: number;
}

/** The width every number is padded to (a 2^40 kB value still fits). */
const WIDTH = 14;

/**
 * The file's text for `view`, one size whatever the values.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { meminfoText } from "./meminfo.ts";
 * const mib = 1024 * 1024;
 * const view = { limit: 256 * mib, usage: 64 * mib, stat: { file: 8 * mib, active_file: 8 * mib } };
 * const text = meminfoText(view);
 * assert.match(text, /^MemTotal: +262144 kB$/m);
 * assert.match(text, /^MemFree: +196608 kB$/m);
 * assert.match(text, /^MemAvailable: +204800 kB$/m);
 * assert.equal(text.length, meminfoText({ limit: 2 ** 40, usage: 0, stat: {} }).length);
 * // The programs' share (here 160 MiB, 20 used) bounds what is free.
 * const share = meminfoText(view, { limit: 160 * mib, usage: 20 * mib });
 * assert.match(share, /^MemFree: +143360 kB$/m);
 * ```
 */
export function meminfoText(view: MemoryView, programs?: ProgramsShare): string {
  const s = (k: string) => view.stat[k] ?? 0;
  const free = Math.max(
    0,
    Math.min(view.limit - view.usage, programs ? programs.limit - programs.usage : Infinity),
  );
  const reclaimable = s("active_file") + s("inactive_file");
  const fields: [string, number][] = [
    ["MemTotal", view.limit],
    ["MemFree", free],
    ["MemAvailable", Math.min(view.limit, free + reclaimable)],
    ["Buffers", 0],
    ["Cached", s("file")],
    ["SwapCached", 0],
    ["Active", s("active_anon") + s("active_file")],
    ["Inactive", s("inactive_anon") + s("inactive_file")],
    ["Active(anon)", s("active_anon")],
    ["Inactive(anon)", s("inactive_anon")],
    ["Active(file)", s("active_file")],
    ["Inactive(file)", s("inactive_file")],
    ["Unevictable", s("unevictable")],
    ["SwapTotal", 0],
    ["SwapFree", 0],
    ["Dirty", s("file_dirty")],
    ["Writeback", s("file_writeback")],
    ["AnonPages", s("anon")],
    ["Mapped", s("file_mapped")],
    ["Shmem", s("shmem")],
    ["SReclaimable", 0],
  ];
  return fields.map(([name, bytes]) =>
    `${`${name}:`.padEnd(16)}${String(Math.floor(bytes / 1024)).padStart(WIDTH)} kB\n`
  ).join("");
}

/** v1 `memory.stat`'s hierarchical names for the v2 ones. */
const V1_NAMES: Record<string, string> = {
  total_rss: "anon",
  total_cache: "file",
  total_shmem: "shmem",
  total_mapped_file: "file_mapped",
  total_dirty: "file_dirty",
  total_writeback: "file_writeback",
  total_active_anon: "active_anon",
  total_inactive_anon: "inactive_anon",
  total_active_file: "active_file",
  total_inactive_file: "inactive_file",
  total_unevictable: "unevictable",
};

function read(path: string): string | null {
  try {
    return Deno.readTextFileSync(path).trim();
  } catch {
    return null;
  }
}

/**
 * What the memory cgroup `dir` (`version` 1 or 2) counts, or null without a limit.
 */
export function memoryView(version: 1 | 2, dir: string): MemoryView | null {
  const limit = Number(
    version === 1 ? read(join(dir, "memory.limit_in_bytes")) : read(join(dir, "memory.max")),
  );
  const usage = Number(
    version === 1 ? read(join(dir, "memory.usage_in_bytes")) : read(join(dir, "memory.current")),
  );
  if (!Number.isFinite(limit) || limit <= 0 || limit >= 2 ** 62 || !Number.isFinite(usage)) {
    return null;
  }
  const stat: Record<string, number> = {};
  for (const line of (read(join(dir, "memory.stat")) ?? "").split("\n")) {
    const [name, value] = line.split(" ");
    const key = version === 1 ? V1_NAMES[name] : name;
    if (key) stat[key] = Number(value);
  }
  return { limit, usage, stat };
}

/**
 * Write `text` over the file at `path` in place (made when missing): same size each time, so a
 * bind mount of it shows the new text and a reader never sees it empty.
 */
export function writeInPlace(path: string, text: string): void {
  const bytes = new TextEncoder().encode(text);
  const file = Deno.openSync(path, { write: true, create: true, mode: 0o644 });
  try {
    let at = 0;
    while (at < bytes.length) at += file.writeSync(bytes.subarray(at));
    file.truncateSync(bytes.length);
  } finally {
    file.close();
  }
}
