/**
 * Where this process's cgroup is on this host, read from what the kernel says rather than from
 * where cgroups usually are: `/proc/self/mountinfo` (which hierarchies are mounted where, each
 * with the **root** of the hierarchy the mount shows) and `/proc/self/cgroup` (this process's
 * path in each hierarchy). A container that bind-mounts part of the host's hierarchy shows a
 * root such as `/docker/1f2e…` and a path below it; a cgroup namespace shows `/` for both; a
 * hybrid host mounts cgroup v2 at `/sys/fs/cgroup/unified` beside the v1 controllers. The
 * directory is the mount point plus the path below the mount's root, and a mount whose root does
 * not hold the path cannot reach the cgroup at all.
 *
 * Pure functions over the two files' text, so the server (which reads `/proc` through libc) and
 * the SDK (through Deno) read them the same way.
 *
 * @module
 */

/** One cgroup mount, from a line of `/proc/self/mountinfo`. */
export interface CgroupMount {
  /** `cgroup` (v1) or `cgroup2`. */
  type: "cgroup" | "cgroup2";
  /** The path of the hierarchy this mount shows at its mount point. */
  root: string;
  /** Where it is mounted. */
  point: string;
  /** Whether the mount is read-only (its own options or the super block's). */
  readOnly: boolean;
  /** The super block's options: for v1, the controllers (`freezer`, `name=systemd`, …). */
  options: string[];
}

/** `\040` and friends: mountinfo escapes space, tab, newline and backslash in octal. */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/**
 * The cgroup mounts of a `/proc/self/mountinfo` text, in order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cgroupMounts } from "./cgroup_paths.ts";
 * const text = "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n" +
 *   "41 31 0:38 /docker/ab /sys/fs/cgroup/my\\040dir ro,relatime shared:9 - cgroup2 cgroup2 rw\n" +
 *   "23 1 0:21 / /proc rw - proc proc rw\n";
 * assert.deepEqual(cgroupMounts(text), [
 *   { type: "cgroup", root: "/", point: "/sys/fs/cgroup/freezer", readOnly: false,
 *     options: ["rw", "freezer"] },
 *   { type: "cgroup2", root: "/docker/ab", point: "/sys/fs/cgroup/my dir", readOnly: true,
 *     options: ["rw"] },
 * ]);
 * ```
 */
export function cgroupMounts(mountinfo: string): CgroupMount[] {
  const out: CgroupMount[] = [];
  for (const line of mountinfo.split("\n")) {
    // id parent major:minor root point options [optional fields…] - type source super-options
    const at = line.indexOf(" - ");
    if (at < 0) continue;
    const left = line.slice(0, at).split(" ");
    const [type, , superOptions = ""] = line.slice(at + 3).split(" ");
    if (type !== "cgroup" && type !== "cgroup2") continue;
    const mountOptions = (left[5] ?? "").split(",");
    const options = superOptions.split(",");
    out.push({
      type,
      root: unescape(left[3] ?? ""),
      point: unescape(left[4] ?? ""),
      readOnly: mountOptions.includes("ro") || options.includes("ro"),
      options,
    });
  }
  return out;
}

/**
 * This process's path in each hierarchy of a `/proc/self/cgroup` text: by v1 controller (each of
 * a line's comma-separated names, `name=systemd` included), and `""` for the v2 hierarchy (the
 * `0::` line).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ownCgroupPaths } from "./cgroup_paths.ts";
 * const own = ownCgroupPaths("6:freezer:/a\n2:cpu,cpuacct:/b\n0::/user.slice/x.scope\n");
 * assert.equal(own.get("freezer"), "/a");
 * assert.equal(own.get("cpuacct"), "/b");
 * assert.equal(own.get(""), "/user.slice/x.scope");
 * ```
 */
export function ownCgroupPaths(procCgroup: string): Map<string, string> {
  const own = new Map<string, string>();
  for (const line of procCgroup.split("\n")) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    for (const name of m[1].split(",")) own.set(name, m[2]);
  }
  return own;
}

/** Where a process's cgroup is, or why it cannot be reached. */
export type CgroupPlace = { dir: string } | { reason: string };

/**
 * The directory of this process's cgroup in one hierarchy (`controller` of v1, or v2 when
 * `controller` is `""`): the first writable mount of that hierarchy whose root holds the path,
 * joined with the path below that root. Otherwise why not, naming what was looked for.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cgroupMounts, cgroupPlace, ownCgroupPaths } from "./cgroup_paths.ts";
 * const mounts = cgroupMounts(
 *   "41 31 0:38 /docker/ab /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n" +
 *     "37 31 0:34 / /sys/fs/cgroup/freezer ro - cgroup cgroup rw,freezer\n",
 * );
 * const own = ownCgroupPaths("6:freezer:/x\n0::/docker/ab/c\n");
 * assert.deepEqual(cgroupPlace(mounts, own, ""), { dir: "/sys/fs/cgroup/c" });
 * assert.match((cgroupPlace(mounts, own, "freezer") as { reason: string }).reason, /read-only/);
 * const elsewhere = ownCgroupPaths("0::/other\n");
 * assert.match((cgroupPlace(mounts, elsewhere, "") as { reason: string }).reason, /\/docker\/ab/);
 * ```
 */
export function cgroupPlace(
  mounts: readonly CgroupMount[],
  own: ReadonlyMap<string, string>,
  controller: string,
): CgroupPlace {
  const what = controller === "" ? "cgroup v2" : `cgroup v1 ${controller}`;
  const path = own.get(controller)?.replace(/ \(deleted\)$/, "");
  if (path === undefined) {
    return {
      reason: `/proc/self/cgroup names no ${what} hierarchy (no ${
        controller === "" ? "0::" : `"${controller}"`
      } line)`,
    };
  }
  const candidates = mounts.filter((m) =>
    controller === "" ? m.type === "cgroup2" : m.type === "cgroup" && m.options.includes(controller)
  );
  if (candidates.length === 0) return { reason: `no ${what} mount in /proc/self/mountinfo` };
  const holding = candidates.filter((m) =>
    m.root === "/" || path === m.root || path.startsWith(`${m.root}/`)
  );
  if (holding.length === 0) {
    const seen = candidates.map((m) => `${m.point} (root ${m.root})`).join(", ");
    return { reason: `no ${what} mount holds this process's cgroup ${path}: ${seen}` };
  }
  const writable = holding.find((m) => !m.readOnly);
  if (writable === undefined) {
    return { reason: `the ${what} mount ${holding[0].point} is read-only` };
  }
  const below = writable.root === "/" ? path : path.slice(writable.root.length);
  const dir = `${writable.point.replace(/\/$/, "")}${below === "/" ? "" : below}`;
  return { dir: dir === "" ? "/" : dir };
}
