/**
 * Who holds a TCP port, for the "address already in use" message: the listening socket's inode
 * from `/proc/net/tcp` and `tcp6`, then the process with a descriptor on that socket. Best effort:
 * without the rights to read another process's descriptors the answer is only the port.
 *
 * @module
 */

/**
 * `pid N (command line)` of the process listening on `port`, or `undefined` when it cannot be
 * told.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { portHolder } from "./port_holder.ts";
 * using listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
 * const holder = await portHolder((listener.addr as Deno.NetAddr).port);
 * assert.match(holder ?? "", new RegExp(`^pid ${Deno.pid} \\(`));
 * ```
 */
export async function portHolder(port: number): Promise<string | undefined> {
  const inodes = new Set<string>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = await Deno.readTextFile(table);
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || fields[3] !== "0A") continue; // 0A: LISTEN
      if (parseInt(fields[1].split(":")[1], 16) === port) inodes.add(fields[9]);
    }
  }
  if (inodes.size === 0) return undefined;
  try {
    for await (const entry of Deno.readDir("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      if (await holds(entry.name, inodes)) {
        const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`).catch(() => "");
        const command = cmdline.split("\0").filter(Boolean).join(" ");
        return `pid ${entry.name} (${
          command.length > 120 ? command.slice(0, 117) + "..." : command
        })`;
      }
    }
  } catch {
    // /proc unreadable: the port alone has to do
  }
  return undefined;
}

async function holds(pid: string, inodes: Set<string>): Promise<boolean> {
  try {
    for await (const fd of Deno.readDir(`/proc/${pid}/fd`)) {
      const target = await Deno.readLink(`/proc/${pid}/fd/${fd.name}`).catch(() => "");
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode && inodes.has(inode)) return true;
    }
  } catch {
    // gone, or not ours to read
  }
  return false;
}

/**
 * The message for a port that is taken: the port, its address and, when it can be told, who
 * holds it.
 */
export async function portInUseMessage(host: string, port: number, flag: string): Promise<string> {
  const holder = await portHolder(port);
  return `${host}:${port} is already in use${holder ? ` by ${holder}` : ""}; stop that or ` +
    `choose another port with ${flag} (0 picks a free one)`;
}
