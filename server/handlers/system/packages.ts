/**
 * `GET /system/packages`: Debian packages from `/var/lib/dpkg/status`, Python distributions as
 * the environment's `python3` sees them (`importlib.metadata`, so virtualenvs and pyenv count),
 * and npm global packages from the `node_modules` folders of `/usr/lib` and `/usr/local/lib`.
 *
 * @module
 */

import { ApiError } from "../../errors.ts";
import { toolOutput } from "../../process/run.ts";
import type { EndpointHandler } from "../../pipeline/handler.ts";
import { readText } from "./machine.ts";
import { type SystemTools, systemTools } from "./tools.ts";

type Manager = "deb" | "pip" | "npm";

/** One installed package. */
export interface InstalledPackage {
  /** Which manager installed it. */
  manager: Manager;
  /** Its name. */
  name: string;
  /** Its version. */
  version: string;
}

const MANAGERS: readonly Manager[] = ["deb", "pip", "npm"];

async function debPackages(): Promise<InstalledPackage[] | null> {
  const text = await readText("/var/lib/dpkg/status");
  if (text === null) return null;
  const out: InstalledPackage[] = [];
  for (const stanza of text.split(/\n\s*\n/)) {
    const field = (name: string) => new RegExp(`^${name}: (.*)$`, "m").exec(stanza)?.[1];
    const name = field("Package");
    const status = field("Status");
    if (name && status?.endsWith(" installed")) {
      out.push({ manager: "deb", name, version: field("Version") ?? "" });
    }
  }
  return out;
}

const PY_LIST =
  "import json, importlib.metadata as m\nprint(json.dumps([[d.metadata['Name'], d.version] for d in m.distributions()]))";

async function pipPackages(tools: SystemTools): Promise<InstalledPackage[] | null> {
  const argv = ["python3", "-I", "-c", PY_LIST];
  const out = await toolOutput(argv, tools.env, 15000, "/", tools.spawner);
  if (out === null) return null;
  try {
    const rows = JSON.parse(out) as [string | null, string][];
    const seen = new Set<string>();
    return rows.filter(([name]) => name && !seen.has(name) && seen.add(name))
      .map(([name, version]) => ({ manager: "pip", name: name!, version }));
  } catch {
    return null;
  }
}

async function npmPackages(): Promise<InstalledPackage[] | null> {
  let present = false;
  const out: InstalledPackage[] = [];
  for (const root of ["/usr/lib/node_modules", "/usr/local/lib/node_modules"]) {
    const names: string[] = [];
    try {
      for await (const e of Deno.readDir(root)) {
        present = true;
        if (e.name.startsWith("@")) {
          for await (const s of Deno.readDir(`${root}/${e.name}`)) {
            names.push(`${e.name}/${s.name}`);
          }
        } else if (!e.name.startsWith(".")) names.push(e.name);
      }
    } catch { /* absent or unreadable */ }
    for (const name of names) {
      const text = await readText(`${root}/${name}/package.json`);
      try {
        const pkg = JSON.parse(text ?? "");
        out.push({ manager: "npm", name: pkg.name ?? name, version: String(pkg.version ?? "") });
      } catch { /* not a package */ }
    }
  }
  return present ? out : null;
}

function parseLimit(raw: string | undefined): number {
  if (raw === undefined || raw === "") return 1000;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 10000) {
    throw new ApiError("invalid_arguments", "limit must be an integer from 1 to 10000", {
      param: "limit",
    });
  }
  return n;
}

/** `GET /system/packages`. */
export const packages: EndpointHandler = async (c) => {
  const manager = c.req.query("manager");
  if (manager !== undefined && !MANAGERS.includes(manager as Manager)) {
    throw new ApiError("invalid_arguments", "manager must be deb, pip or npm", {
      param: "manager",
    });
  }
  const limit = parseLimit(c.req.query("limit"));
  const query = c.req.query("query")?.toLowerCase() ?? "";
  const wanted = manager ? [manager as Manager] : MANAGERS;
  const tools = systemTools(c.var.state);
  const lists = await Promise.all(
    wanted.map((m) =>
      m === "deb" ? debPackages() : m === "pip" ? pipPackages(tools) : npmPackages()
    ),
  );
  const managers: Record<string, { present: boolean; count: number }> = {};
  const all: InstalledPackage[] = [];
  wanted.forEach((m, i) => {
    const matched = (lists[i] ?? []).filter((p) => p.name.toLowerCase().includes(query))
      .sort((a, b) => a.name.localeCompare(b.name));
    managers[m] = { present: lists[i] !== null, count: matched.length };
    all.push(...matched);
  });
  return c.json({ packages: all.slice(0, limit), managers, truncated: all.length > limit });
};
