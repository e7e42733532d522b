/**
 * `GET /system/ports`: listening TCP sockets from `/proc/net/tcp` and `/proc/net/tcp6`, with the
 * owning process found by the socket's inode in `/proc/<pid>/fd` (read by the server itself:
 * `socket_owners.ts`).
 *
 * @module
 */

import type { EndpointHandler } from "../../pipeline/handler.ts";
import { procFiles } from "./machine.ts";
import { socketOwners } from "./socket_owners.ts";
import { type SystemTools, systemTools } from "./tools.ts";

const LISTEN = "0A";

/** One listening socket. */
export interface ListeningPort {
  /** Port number. */
  port: number;
  /** Bound address. */
  address: string;
  /** `ipv4` or `ipv6`. */
  family: "ipv4" | "ipv6";
  /** Owner uid. */
  uid: number;
  /** Owning process, when visible. */
  pid: number | null;
  /** Its command name. */
  command: string | null;
}

/** `0100007F` (little-endian) to `127.0.0.1`. */
function ipv4(hex: string): string {
  const bytes = hex.match(/../g)!.map((b) => parseInt(b, 16));
  return bytes.reverse().join(".");
}

/** 32 hex digits, four little-endian 32-bit words, to the compressed IPv6 form. */
function ipv6(hex: string): string {
  const words: string[] = [];
  for (let w = 0; w < 4; w++) {
    const bytes = hex.slice(w * 8, w * 8 + 8).match(/../g)!.reverse().join("");
    words.push(bytes.slice(0, 4), bytes.slice(4, 8));
  }
  const mapped = words.slice(0, 6).join("") === "00000000000000000000ffff";
  if (mapped) return `::ffff:${ipv4(hex.slice(24))}`;
  const groups = words.map((g) => parseInt(g, 16).toString(16));
  // Compress the longest run of zero groups (RFC 5952).
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== "0") {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === "0") j++;
    if (j - i > bestLen && j - i > 1) [best, bestLen] = [i, j - i];
    i = j;
  }
  if (best < 0) return groups.join(":");
  return `${groups.slice(0, best).join(":")}::${groups.slice(best + bestLen).join(":")}`;
}

function listening(text: string, family: "ipv4" | "ipv6") {
  const out: {
    port: number;
    address: string;
    family: typeof family;
    uid: number;
    inode: string;
  }[] = [];
  for (const line of text.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10 || f[3] !== LISTEN) continue;
    const [addr, port] = f[1].split(":");
    out.push({
      port: parseInt(port, 16),
      address: family === "ipv4" ? ipv4(addr) : ipv6(addr),
      family,
      uid: Number(f[7]),
      inode: f[9],
    });
  }
  return out;
}

/** inode to pid and command for the sockets in `inodes` (see `socket_owners.ts`). */
async function owners(
  inodes: Set<string>,
  tools: SystemTools,
): Promise<Map<string, { pid: number; command: string | null }>> {
  const pids = await socketOwners(inodes);
  const comms = await procFiles([...new Set(pids.values())].map((p) => `/proc/${p}/comm`), tools);
  const found = new Map<string, { pid: number; command: string | null }>();
  for (const [inode, pid] of pids) {
    found.set(inode, { pid, command: comms.get(`/proc/${pid}/comm`)?.trim() ?? null });
  }
  return found;
}

/** `GET /system/ports`. */
export const ports: EndpointHandler = async (c) => {
  const tools = systemTools(c.var.state);
  const net = await procFiles(["/proc/net/tcp", "/proc/net/tcp6"], tools);
  const rows = [
    ...listening(net.get("/proc/net/tcp") ?? "", "ipv4"),
    ...listening(net.get("/proc/net/tcp6") ?? "", "ipv6"),
  ];
  const byInode = await owners(new Set(rows.map((r) => r.inode)), tools);
  const result: ListeningPort[] = rows.map((r) => {
    const owner = byInode.get(r.inode);
    return {
      port: r.port,
      address: r.address,
      family: r.family,
      uid: r.uid,
      pid: owner?.pid ?? null,
      command: owner?.command ?? null,
    };
  });
  result.sort((a, b) => a.port - b.port || a.address.localeCompare(b.address));
  return c.json({ ports: result });
};
