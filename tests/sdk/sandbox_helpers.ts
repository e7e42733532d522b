/**
 * Helpers of the Sandbox tests: a private `SANDBAR_HOME` per test file, and the check that a
 * test left nothing behind (no sandbox directory, no supervisor or bubblewrap process).
 *
 * @module
 */

import assert from "node:assert/strict";
import { LocalProvider, registerProvider, type Sandbox } from "../../sdk/mod.ts";
import { eventually } from "../helpers/wait.ts";
import { allPids, childPids, procCmdline, procStat } from "../../sdk/providers/local/procfs.ts";

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
  return allPids().filter((pid) =>
    pid !== Deno.pid && procStat(pid)?.state !== "Z" && procCmdline(pid)?.includes(text)
  );
}

export { childPids };

/**
 * The processes a sandbox's bubblewrap runs (its direct children), seen from the host: the
 * sandbox's commands cannot read `/proc` (they are confined), so the tests look from outside.
 */
export function sandboxChildren(dir: string): { pid: number; cmdline: string }[] {
  const bwrap = processesMentioning(dir).filter((p) => {
    return procCmdline(p)?.split("\0")[0].endsWith("bwrap") ?? false;
  });
  const out: { pid: number; cmdline: string }[] = [];
  const walk = (pid: number) => {
    for (const child of childPids(pid)) {
      const cmdline = procCmdline(child);
      if (cmdline !== null) out.push({ pid: child, cmdline });
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

/**
 * Everything a process inside `sandbox` could try to read, run inside it: every process's
 * environment and command line, and every file it can see outside the system directories
 * (`/proc`, `/sys`, `/usr`, `/dev`; files under 2 MiB). A secret must not appear in it.
 */
export async function everythingReadableInside(sandbox: Sandbox): Promise<string> {
  const search = await sandbox.commands.run(
    [
      'for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do cat "$f" 2>/dev/null; echo; done',
      "find / -xdev \\( -path /proc -o -path /sys -o -path /usr -o -path /dev \\) -prune -o " +
      "-type f -size -2M -print 2>/dev/null | xargs -r cat 2>/dev/null",
    ].join("; "),
    { timeout: 60 },
  );
  return search.stdout;
}
