/**
 * Helpers of the Sandbox tests: a private `SANDBAR_HOME` per test file, and the check that a
 * test left nothing behind (no sandbox directory, no supervisor or bubblewrap process).
 *
 * @module
 */

import assert from "node:assert/strict";
import { LocalProvider, registerProvider } from "../../sdk/mod.ts";
import { eventually } from "../helpers/wait.ts";

let fileHome: string | undefined;

/**
 * Make a fresh sandbox home for this test file, and make it the default `local` provider's home.
 * Not through `SANDBAR_HOME`: `deno test --parallel` runs files as workers of one process, which
 * share one environment, while each worker has its own provider registry. It is removed when the
 * process ends even if no test ran (a `--filter` that matches none skips `afterAll`).
 */
export async function useSandbarHome(): Promise<string> {
  const home = await Deno.makeTempDir({ prefix: "sbh-" });
  fileHome = home;
  registerProvider("local", () => new LocalProvider({ home }));
  globalThis.addEventListener("unload", () => {
    try {
      Deno.removeSync(home, { recursive: true });
    } catch { /* removed by dropSandbarHome */ }
  });
  return home;
}

/** Pids of processes whose command line mentions `text` (this process excluded). */
export function processesMentioning(text: string): number[] {
  const found: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name) || Number(e.name) === Deno.pid) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${e.name}/cmdline`);
      const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      if (state !== "Z" && cmdline.includes(text)) found.push(Number(e.name));
    } catch { /* gone */ }
  }
  return found;
}

/** The pids of `pid`'s children, read from the host's `/proc`. */
export function childPids(pid: number): number[] {
  const found: number[] = [];
  try {
    for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
      const text = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/children`).trim();
      if (text) found.push(...text.split(/\s+/).map(Number));
    }
  } catch { /* gone */ }
  return found;
}

/**
 * The processes a sandbox's bubblewrap runs (its direct children), seen from the host: the
 * sandbox's commands cannot read `/proc` (they are confined), so the tests look from outside.
 */
export function sandboxChildren(dir: string): { pid: number; cmdline: string }[] {
  const bwrap = processesMentioning(dir).filter((p) => {
    try {
      return Deno.readTextFileSync(`/proc/${p}/cmdline`).split("\0")[0].endsWith("bwrap");
    } catch {
      return false;
    }
  });
  const out: { pid: number; cmdline: string }[] = [];
  const walk = (pid: number) => {
    for (const child of childPids(pid)) {
      try {
        out.push({ pid: child, cmdline: Deno.readTextFileSync(`/proc/${child}/cmdline`) });
      } catch { /* gone */ }
      walk(child);
    }
  };
  for (const b of bwrap) walk(b);
  return out;
}

/** Sandbox directories under `home`. */
export function sandboxDirs(home: string): string[] {
  try {
    return [...Deno.readDirSync(`${home}/sandboxes`)].map((e) => e.name);
  } catch {
    return [];
  }
}

/** Whether `check` comes true within `seconds`, for assertions that word their own failure. */
export function holdsWithin(
  check: () => boolean | Promise<boolean>,
  seconds = 10,
): Promise<boolean> {
  return eventually("", check, seconds * 1000, 50).then(() => true, () => false);
}

/**
 * Assert that no sandbox of `home` is left: no directory and no process (supervisor, bubblewrap,
 * server) that mentions it. Processes inside a sandbox's PID namespace die with its bubblewrap.
 */
export async function assertNothingLeft(home: string, id?: string): Promise<void> {
  const mark = id ? `${home}/sandboxes/${id}` : home;
  const clean = await holdsWithin(() => processesMentioning(mark).length === 0, 5);
  assert.ok(clean, `processes left: ${processesMentioning(mark).join(", ")}`);
  const dirs = id ? sandboxDirs(home).filter((d) => d === id) : sandboxDirs(home);
  assert.deepEqual(dirs, [], `sandbox directories left under ${home}`);
}

/** Remove the home after a test file (asserting it is empty of sandboxes first). */
export async function dropSandbarHome(home: string): Promise<void> {
  await assertNothingLeft(home);
  await Deno.remove(home, { recursive: true });
}

/** Run a Deno script in a child process with this SANDBAR_HOME; its stdout, trimmed. */
export async function runChild(code: string, env: Record<string, string> = {}): Promise<string> {
  const mod = new URL("../../sdk/mod.ts", import.meta.url).href;
  const script = `import * as sdk from ${JSON.stringify(mod)};\n${code}`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script],
    env: { SANDBAR_HOME: fileHome!, ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  if (!out.success) {
    throw new Error(`child failed: ${new TextDecoder().decode(out.stderr)}\n${text}`);
  }
  return text;
}
