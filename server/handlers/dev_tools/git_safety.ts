/**
 * What keeps the `git` endpoints from running anything but git, or reading outside the allowed
 * paths, whatever the repository (which a caller with file write access can shape at will):
 *
 * - The environment: every `GIT_*` variable of the environment store is dropped (`GIT_TRACE`,
 *   `GIT_CONFIG_PARAMETERS`, `GIT_DIR`, `GIT_OBJECT_DIRECTORY`, `GIT_ALTERNATE_OBJECT_DIRECTORIES`
 *   …), the system and global configuration files are not read (`HOME` is the confinement's
 *   scratch directory), and no transport is allowed (`GIT_ALLOW_PROTOCOL`).
 * - Command-line `-c` options turn off the pager, hooks, the file-system monitor, credential
 *   helpers, alternate-refs commands and filters; `--no-ext-diff --no-textconv` turn off diff
 *   drivers.
 * - A repository whose own configuration names a program git could run for a read (lazy fetch
 *   from a promisor remote, `uploadpack`, `fsmonitor`, `sshCommand`, `hooksPath`, a credential
 *   helper, an include of another file) is refused with `process_denied` before any other git
 *   command runs: {@linkcode refuseRunningConfig}.
 * - The repository's `commondir` and `alternates` must lie inside the allowed paths.
 * - And git runs confined by the kernel (`server/confine/`): it may execute git alone (no shell,
 *   so a configuration that slipped through cannot start a program), read the allowed paths and
 *   write only its scratch directory.
 *
 * @module
 */

import { dirname, join, resolve } from "node:path";
import { pathKind } from "../../confine/fs_probe.ts";
import { ApiError } from "../../errors.ts";

/** `-c` options for every git command the server runs. */
export const GIT_SAFETY_OPTIONS: readonly string[] = [
  "core.fsmonitor=false",
  "core.hooksPath=/dev/null",
  "core.pager=cat",
  "core.askPass=",
  "core.sshCommand=false",
  "core.alternateRefsCommand=",
  "credential.helper=",
  "protocol.allow=never",
  "diff.external=",
  "submodule.recurse=false",
  "gc.auto=0",
  "maintenance.auto=false",
].flatMap((o) => ["-c", o]);

/**
 * The environment git runs with: `base` without any `GIT_*` variable, plus the settings that
 * keep it from reading configuration outside the repository or reaching the network.
 */
export function gitEnvironment(
  base: Record<string, string>,
  home: string,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) {
    if (!k.startsWith("GIT_") && k !== "XDG_CONFIG_HOME" && k !== "HOME") env[k] = v;
  }
  return Object.assign(env, {
    HOME: home,
    XDG_CONFIG_HOME: home,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ATTR_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_OPTIONAL_LOCKS: "0",
    GIT_LITERAL_PATHSPECS: "1",
    GIT_PAGER: "cat",
    GIT_ALLOW_PROTOCOL: "none",
    GIT_PROTOCOL_FROM_USER: "0",
    LC_ALL: "C",
  });
}

/** Configuration keys (as `git config --list` prints them) that make git run a program. */
const RUNS_A_PROGRAM: readonly RegExp[] = [
  /^extensions\.partialclone$/,
  /^remote\..+\.(promisor|uploadpack|receivepack|vcs)$/,
  /^core\.(fsmonitor|sshcommand|gitproxy|alternaterefscommand|hookspath|askpass)$/,
  /^credential\.(.+\.)?helper$/,
  /^uploadpack\.packobjectshook$/,
  /^(include|includeif\..+)\.path$/,
];

/** Values that run nothing, for the keys that take a switch. */
const HARMLESS_VALUES = new Set(["", "false", "0", "no", "off", "/dev/null"]);

/**
 * Throw `process_denied` when the `git config -z --list` output `listing` names a program git
 * could run.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { refuseRunningConfig } from "./git_safety.ts";
 * refuseRunningConfig("core.bare\nfalse\0");
 * assert.throws(() => refuseRunningConfig("remote.origin.uploadpack\ntouch /tmp/x #\0"));
 * ```
 */
export function refuseRunningConfig(listing: string): void {
  for (const entry of listing.split("\0")) {
    if (!entry) continue;
    const nl = entry.indexOf("\n");
    const key = (nl < 0 ? entry : entry.slice(0, nl)).toLowerCase();
    const value = nl < 0 ? "" : entry.slice(nl + 1);
    if (!RUNS_A_PROGRAM.some((r) => r.test(key))) continue;
    if (HARMLESS_VALUES.has(value.trim().toLowerCase())) continue;
    throw new ApiError(
      "process_denied",
      `the repository's configuration sets ${key}, which makes git run a program or read ` +
        "outside the repository; the git endpoints refuse such repositories",
      { param: "path" },
    );
  }
}

/** Paths a repository links to that git reads: `commondir` and the object `alternates`. */
export async function linkedPaths(gitDir: string, commonDir: string): Promise<string[]> {
  const out: string[] = [];
  const read = async (file: string) => {
    try {
      return await Deno.readTextFile(file);
    } catch {
      return null;
    }
  };
  const common = await read(resolve(gitDir, "commondir"));
  if (common !== null && common.trim()) out.push(resolve(gitDir, common.trim()));
  const alternates = await read(resolve(commonDir, "objects/info/alternates"));
  for (const line of (alternates ?? "").split("\n")) {
    const l = line.trim();
    if (l && !l.startsWith("#")) out.push(resolve(commonDir, "objects", l));
  }
  return out;
}

/**
 * The nearest folder at or above `path` holding a `.git`, looked up through libc (the confined
 * git, and the narrowed server, may not look outside the allowed paths): what git would have
 * found had it been allowed to read there. Null when there is none.
 */
export function enclosingRepository(path: string): string | null {
  for (let dir = path;; dir = dirname(dir)) {
    if (pathKind(join(dir, ".git")) !== null) return dir;
    if (dir === dirname(dir)) return null;
  }
}
