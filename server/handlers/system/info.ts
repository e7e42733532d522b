/**
 * `GET /system/info`: what the machine is. Tool versions are read once per server.
 *
 * @module
 */

import { toolOutput } from "../../process/run.ts";
import type { ServerState, Service } from "../../state.ts";
import { SERVER_VERSION } from "../../version.ts";
import type { EndpointHandler } from "../../pipeline/handler.ts";
import { diskUsage, osRelease, parseMemInfo, parseUptime, procFiles, readText } from "./machine.ts";
import { type SystemTools, systemTools } from "./tools.ts";

const TOOLS: Readonly<Record<string, [string[], RegExp]>> = {
  bash: [["bash", "--version"], /version (\d+\.\d+\.\d+)/],
  python: [["python3", "--version"], /Python (\S+)/],
  node: [["node", "--version"], /v?(\S+)/],
  git: [["git", "--version"], /git version (\S+)/],
};

/** Tool versions, looked up once. */
class ToolVersions implements Service {
  #versions: Promise<Record<string, string | null>> | undefined;

  get(tools: SystemTools): Promise<Record<string, string | null>> {
    return this.#versions ??= (async () => {
      const entries = await Promise.all(
        Object.entries(TOOLS).map(async ([name, [argv, re]]) => {
          const out = await toolOutput(argv, tools.env, 10000, "/", tools.spawner);
          return [name, out === null ? null : re.exec(out)?.[1] ?? null] as const;
        }),
      );
      return Object.fromEntries(entries);
    })();
  }

  close(): void {}
}

async function userName(uid: number | null): Promise<string | null> {
  if (uid === null) return null;
  const passwd = (await readText("/etc/passwd")) ?? "";
  for (const line of passwd.split("\n")) {
    const f = line.split(":");
    if (Number(f[2]) === uid) return f[0];
  }
  return null;
}

/** The info document. */
export async function systemInfo(state: ServerState) {
  const helpers = systemTools(state);
  const env = helpers.env;
  const PROC = ["/proc/meminfo", "/proc/uptime", "/proc/cpuinfo", "/proc/sys/kernel/version"];
  const [os, proc, disk, name, tools] = await Promise.all([
    osRelease(),
    procFiles(PROC, helpers),
    diskUsage(state.root, helpers),
    userName(Deno.uid()),
    state.service("system.tool_versions", () => new ToolVersions()).get(helpers),
  ]);
  const mem = parseMemInfo(proc.get("/proc/meminfo"));
  const model = /^model name\s*:\s*(.+)$/m.exec(proc.get("/proc/cpuinfo") ?? "")?.[1] ?? null;
  return {
    os: {
      name: Deno.build.os,
      pretty_name: os.PRETTY_NAME ?? null,
      release: Deno.osRelease(),
      version: proc.get("/proc/sys/kernel/version")?.trim() ?? null,
    },
    arch: Deno.build.arch,
    hostname: Deno.hostname(),
    cpus: { count: navigator.hardwareConcurrency, model },
    memory: { total_bytes: mem.MemTotal ?? null, available_bytes: mem.MemAvailable ?? null },
    disk: disk
      ? {
        path: disk.path,
        total_bytes: disk.total_bytes,
        used_bytes: disk.used_bytes,
        available_bytes: disk.available_bytes,
      }
      : null,
    uptime_seconds: parseUptime(proc.get("/proc/uptime")),
    user: { uid: Deno.uid(), gid: Deno.gid(), name, home: env.HOME ?? null },
    root: state.root,
    versions: {
      sandbar: SERVER_VERSION,
      api: "1",
      deno: Deno.version.deno,
      v8: Deno.version.v8,
      typescript: Deno.version.typescript,
      ...tools,
    },
  };
}

/** `GET /system/info`. */
export const info: EndpointHandler = async (c) => c.json(await systemInfo(c.var.state));
