/**
 * Facts about the machine read from `/proc`, `/etc` and `df`, shared by `system_info` and
 * `system_metrics`.
 *
 * Deno refuses to read `/proc` without `--allow-all`, which the narrowed server does not have,
 * so `/proc` files are read by a `grep` child (processes the server starts are not bound by its
 * Deno permissions) in one spawn per batch of files.
 *
 * @module
 */

import { runCaptured, toolOutput } from "../../process/run.ts";
import type { SystemTools } from "./tools.ts";

/** Usage of the file system holding a path. */
export interface DiskUsage {
  /** The path asked about. */
  path: string;
  /** Size in bytes. */
  total_bytes: number;
  /** Used bytes. */
  used_bytes: number;
  /** Bytes an unprivileged user may still write. */
  available_bytes: number;
  /** Used share, 0 to 100. */
  percent: number;
}

/** `df` of the file system holding `path`, or `null` when `df` is missing or fails. */
export async function diskUsage(
  path: string,
  tools: SystemTools,
): Promise<DiskUsage | null> {
  const argv = ["df", "-P", "-B1", "--", path];
  const out = await toolOutput(argv, tools.env, 10000, "/", tools.spawner);
  const row = out?.trim().split("\n")[1]?.trim().split(/\s+/);
  if (!row || row.length < 6) return null;
  const [total, used, available] = row.slice(1, 4).map(Number);
  if (![total, used, available].every(Number.isFinite)) return null;
  const percent = used + available > 0 ? round((100 * used) / (used + available)) : 0;
  return { path, total_bytes: total, used_bytes: used, available_bytes: available, percent };
}

/** Round to two decimals. */
export function round(n: number): number {
  return Math.round(n * 100) / 100;
}

/** Read a text file, or `null`. */
export async function readText(path: string): Promise<string | null> {
  try {
    return await Deno.readTextFile(path);
  } catch {
    return null;
  }
}

/** Fields of `/etc/os-release`. */
export async function osRelease(): Promise<Record<string, string>> {
  const text = (await readText("/etc/os-release")) ?? (await readText("/usr/lib/os-release")) ?? "";
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) out[m[1]] = m[2].replace(/^"(.*)"$/, "$1");
  }
  return out;
}

/**
 * The text of `/proc` (or any) files, read by one `grep -H` child; a file that cannot be read is
 * absent from the map.
 */
export async function procFiles(
  paths: readonly string[],
  tools: SystemTools,
): Promise<Map<string, string>> {
  const files = new Map<string, string[]>();
  try {
    const r = await runCaptured(
      {
        argv: ["grep", "-H", "", "--", ...paths],
        cwd: "/",
        env: tools.env,
        timeoutMs: 10000,
        spawner: tools.spawner,
      },
      16 << 20,
    );
    for (const line of r.stdout.split("\n")) {
      const path = paths.find((p) => line.startsWith(`${p}:`));
      if (path === undefined) continue;
      const lines = files.get(path) ?? [];
      lines.push(line.slice(path.length + 1));
      files.set(path, lines);
    }
  } catch { /* grep missing */ }
  return new Map([...files].map(([p, lines]) => [p, lines.join("\n")]));
}

/** Seconds since boot, from `/proc/uptime` text. */
export function parseUptime(text: string | undefined): number | null {
  const n = Number(text?.split(" ")[0]);
  return text && Number.isFinite(n) ? n : null;
}

/** `/proc/meminfo` text in bytes, by key. */
export function parseMemInfo(text: string | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of (text ?? "").split("\n")) {
    const m = /^(\w+(?:\(\w+\))?):\s+(\d+)(\s+kB)?$/.exec(line.trim());
    if (m) out[m[1]] = Number(m[2]) * (m[3] ? 1024 : 1);
  }
  return out;
}

/** The aggregate `cpu` line of `/proc/stat` text: jiffies by kind. */
export function parseCpuTimes(text: string | undefined): number[] | null {
  const line = text?.split("\n").find((l) => l.startsWith("cpu "));
  return line ? line.trim().split(/\s+/).slice(1).map(Number) : null;
}
