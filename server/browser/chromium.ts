/**
 * Finding and launching Chromium: Debian's real binary, the flags that keep it off the network
 * except where a page goes, a fresh profile inside the server's state directory, an environment
 * with no credential in it, and the DevTools protocol over a pipe (so Chromium exits when the
 * server does, even if the server is killed).
 *
 * @module
 */

import { treeIntoWork } from "../process/work_cgroup.ts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Browser } from "puppeteer-core";
import type { BrowserConfinement } from "../confine/confinement.ts";
import { LANDLOCK_ENV } from "./exec_tcp_only.ts";

/**
 * Where Chromium is looked for, in order. `/usr/bin/chromium` is Debian's wrapper script, which
 * adds flags from `/etc/chromium.d`; the real binary beside it is preferred.
 */
export const CHROMIUM_CANDIDATES: readonly string[] = [
  "/usr/lib/chromium/chromium",
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
  "/usr/bin/google-chrome",
];

/** The flags the issue asks for: headless, no sandbox of its own, no background traffic. */
export const REQUIRED_FLAGS: readonly string[] = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-sync",
];

/** Flags added for a server: no crash uploads, no keyring, no throttled background pages. */
const SERVER_FLAGS: readonly string[] = [
  "--disable-breakpad",
  "--disable-crash-reporter",
  "--disable-default-apps",
  "--disable-extensions",
  "--disable-dev-shm-usage",
  "--disable-renderer-backgrounding",
  "--disable-background-timer-throttling",
  "--disable-backgrounding-occluded-windows",
  // Chromium's own traffic (autofill, translate, hints) would only ever reach the guard proxy.
  "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication," +
  "InterestFeedContentSuggestions,CertificateTransparencyComponentUpdater",
  "--password-store=basic",
  "--use-mock-keychain",
  "--mute-audio",
  "--hide-scrollbars",
  // WebRTC may not send UDP around the proxy (asked here; enforced by the seccomp filter).
  "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
  // Each context gets its own guard proxy; this one, for anything without, leads nowhere.
  "--proxy-server=socks5://127.0.0.1:9",
  "--proxy-bypass-list=<-loopback>",
];

/** Whether a file exists; a path the server may not even look at counts as missing. */
function exists(path: string): boolean {
  try {
    return existsSync(path);
  } catch {
    return false;
  }
}

/**
 * The Chromium executable: `$SANDBAR_CHROMIUM`, else the first candidate that exists.
 */
export function findChromium(env: Readonly<Record<string, string | undefined>>): string | null {
  const chosen = env.SANDBAR_CHROMIUM;
  if (chosen) return exists(chosen) ? chosen : null;
  return CHROMIUM_CANDIDATES.find(exists) ?? null;
}

/** The command-line flags for a profile directory. */
export function chromiumFlags(profileDir: string): string[] {
  return [...REQUIRED_FLAGS, ...SERVER_FLAGS, `--user-data-dir=${profileDir}`];
}

/**
 * The environment Chromium gets: enough to run and find fonts, with its home and caches inside
 * `dir`, and nothing else from the server's environment (no token can leak into it).
 */
export function chromiumEnv(dir: string): Record<string, string> {
  const keep = ["PATH", "LANG", "LC_ALL", "TZ", "FONTCONFIG_PATH", "FONTCONFIG_FILE"];
  const env: Record<string, string> = {};
  for (const k of keep) {
    const v = Deno.env.get(k);
    if (v !== undefined) env[k] = v;
  }
  env.HOME = join(dir, "home");
  env.XDG_CONFIG_HOME = join(dir, "home", ".config");
  env.XDG_CACHE_HOME = join(dir, "home", ".cache");
  env.XDG_DATA_HOME = join(dir, "home", ".local", "share");
  env.TMPDIR = join(dir, "tmp");
  return env;
}

/** The launcher that puts Chromium under the TCP-only seccomp filter (Linux). */
const EXEC_TCP_ONLY = new URL("./exec_tcp_only.ts", import.meta.url).href;

/**
 * The program and arguments that start Chromium with no UDP at all (see `seccomp_filter.ts`):
 * on Linux, this Deno running `exec_tcp_only.ts`, which installs the filter and becomes
 * Chromium; elsewhere Chromium itself, with only its own flags to keep WebRTC off UDP.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tcpOnlyLaunch } from "./chromium.ts";
 * const { program, args } = tcpOnlyLaunch("/usr/lib/chromium/chromium", ["--headless"]);
 * if (Deno.build.os === "linux") {
 *   assert.equal(program, Deno.execPath());
 *   assert.deepEqual(args.slice(-2), ["/usr/lib/chromium/chromium", "--headless"]);
 * }
 * ```
 */
export function tcpOnlyLaunch(
  chromium: string,
  flags: string[],
): { program: string; args: string[] } {
  if (Deno.build.os !== "linux") return { program: chromium, args: flags };
  return {
    program: Deno.execPath(),
    args: [
      "run",
      "--allow-ffi",
      `--allow-env=${LANDLOCK_ENV}`,
      "--no-config",
      "--no-lock",
      "--quiet",
      EXEC_TCP_ONLY,
      chromium,
      ...flags,
    ],
  };
}

/** A launched Chromium with the directory that holds its profile. */
export interface LaunchedChromium {
  /** The puppeteer handle. */
  browser: Browser;
  /** The directory holding the profile, home and temp files; removed on close. */
  dir: string;
}

/**
 * Launch Chromium with a fresh directory under `stateDir`, confined (on Linux with Landlock) to
 * what `confine` returns for that directory: its launcher restricts itself before it becomes
 * Chromium (see `exec_tcp_only.ts`).
 */
export async function launchChromium(
  stateDir: string,
  executablePath: string,
  confine: (dir: string) => BrowserConfinement | null = () => null,
): Promise<LaunchedChromium> {
  const dir = await Deno.makeTempDir({ dir: stateDir, prefix: "chromium-" });
  await Deno.mkdir(join(dir, "home"), { recursive: true });
  await Deno.mkdir(join(dir, "tmp"), { recursive: true });
  try {
    // Loaded on first launch: a server with the browser group off never pays for puppeteer.
    const { default: puppeteer } = await import("puppeteer-core");
    const { program, args } = tcpOnlyLaunch(executablePath, chromiumFlags(join(dir, "profile")));
    const env = chromiumEnv(dir);
    const confinement = Deno.build.os === "linux" ? confine(dir) : null;
    if (confinement) env[LANDLOCK_ENV] = JSON.stringify(confinement);
    const browser = await puppeteer.launch({
      executablePath: program,
      args,
      ignoreDefaultArgs: true,
      pipe: true,
      env,
      defaultViewport: null,
      // The server decides when Chromium stops; puppeteer's handlers would exit the process.
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
      timeout: 60_000,
      protocolTimeout: 180_000,
    });
    // In a local sandbox, Chromium and its zygotes join the programs, away from the server's
    // reserve; the renderers they fork later are born there (`process/work_cgroup.ts`).
    const pid = browser.process()?.pid;
    if (pid !== undefined) treeIntoWork(pid);
    return { browser, dir };
  } catch (e) {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw e;
  }
}
