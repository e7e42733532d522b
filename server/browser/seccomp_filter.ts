/**
 * The seccomp filter Chromium runs under: its sockets to the network may only be TCP, so a page
 * cannot send UDP anywhere (WebRTC's STUN and TURN, QUIC, mDNS), whatever Chromium's own
 * settings say. Chromium's TCP goes through the guard proxy (`--proxy-server`); UDP cannot be
 * proxied by SOCKS in Chromium, and `--force-webrtc-ip-handling-policy` was seen not to stop
 * STUN, so the kernel refuses it: `socket(AF_INET or AF_INET6, anything but SOCK_STREAM)`,
 * `socket(AF_PACKET)` and `io_uring_setup` (which could open sockets past this filter) fail
 * with `EPERM`, and so does every system call of another architecture (32-bit or x32 entry
 * points that would dodge the numbers checked here). Unix sockets and netlink stay allowed
 * (Chromium's own IPC and its network change notifier).
 *
 * A classic BPF program, as `struct sock_filter` entries (8 bytes each); x86_64 and aarch64.
 *
 * @module
 */

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_AND_K = 0x54;
const BPF_RET_K = 0x06;

const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const EPERM = 1;

const AF_INET = 2;
const AF_INET6 = 10;
const AF_PACKET = 17;
const SOCK_STREAM = 1;
const SOCK_TYPE_MASK = 0xf;
const X32_SYSCALL_BIT = 0x40000000;

/** What differs between the two architectures. */
interface Arch {
  audit: number;
  socket: number;
  ioUringSetup: number;
}

const ARCHES: Record<string, Arch> = {
  x86_64: { audit: 0xc000003e, socket: 41, ioUringSetup: 425 },
  aarch64: { audit: 0xc00000b7, socket: 198, ioUringSetup: 425 },
};

type Insn = { code: number; k: number; jt?: string; jf?: string; label?: string };

/** Offsets of `struct seccomp_data`: nr, arch, then args[0..5] as 64-bit (low word first). */
const NR = 0;
const ARCH = 4;
const ARG0 = 16;
const ARG1 = 24;

function assemble(program: Insn[]): Uint8Array<ArrayBuffer> {
  const at = new Map<string, number>();
  program.forEach((insn, i) => insn.label && at.set(insn.label, i));
  const out = new Uint8Array(program.length * 8);
  const view = new DataView(out.buffer);
  program.forEach((insn, i) => {
    const jump = (label: string | undefined) => {
      if (label === undefined) return 0;
      const target = at.get(label);
      if (target === undefined || target <= i) throw new Error(`bad label ${label}`);
      return target - i - 1;
    };
    view.setUint16(i * 8, insn.code, true);
    view.setUint8(i * 8 + 2, jump(insn.jt));
    view.setUint8(i * 8 + 3, jump(insn.jf));
    view.setUint32(i * 8 + 4, insn.k >>> 0, true);
  });
  return out;
}

/**
 * The filter for this machine's architecture, or null where there is none (not Linux, or an
 * architecture other than x86_64 and aarch64).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tcpOnlyFilter } from "./seccomp_filter.ts";
 * const filter = tcpOnlyFilter("x86_64")!;
 * assert.equal(filter.length % 8, 0); // whole `struct sock_filter` entries
 * ```
 */
export function tcpOnlyFilter(arch: string = Deno.build.arch): Uint8Array<ArrayBuffer> | null {
  const a = ARCHES[arch];
  if (!a) return null;
  return assemble([
    { code: BPF_LD_W_ABS, k: ARCH },
    { code: BPF_JEQ_K, k: a.audit, jf: "deny" },
    { code: BPF_LD_W_ABS, k: NR },
    { code: BPF_JGE_K, k: X32_SYSCALL_BIT, jt: "deny" },
    { code: BPF_JEQ_K, k: a.ioUringSetup, jt: "deny" },
    { code: BPF_JEQ_K, k: a.socket, jf: "allow" },
    { code: BPF_LD_W_ABS, k: ARG0 },
    { code: BPF_JEQ_K, k: AF_PACKET, jt: "deny" },
    { code: BPF_JEQ_K, k: AF_INET, jt: "type" },
    { code: BPF_JEQ_K, k: AF_INET6, jt: "type", jf: "allow" },
    { code: BPF_LD_W_ABS, k: ARG1, label: "type" },
    { code: BPF_AND_K, k: SOCK_TYPE_MASK },
    { code: BPF_JEQ_K, k: SOCK_STREAM, jt: "allow" },
    { code: BPF_RET_K, k: SECCOMP_RET_ERRNO | EPERM, label: "deny" },
    { code: BPF_RET_K, k: SECCOMP_RET_ALLOW, label: "allow" },
  ]);
}
