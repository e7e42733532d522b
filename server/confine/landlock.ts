/**
 * Landlock (Linux 5.13+) over FFI: asking the kernel's ABI version, and restricting the CALLING
 * THREAD to a set of file hierarchies. `landlock_restrict_self` and `PR_SET_NO_NEW_PRIVS` act on
 * the calling thread only, and every process that thread starts inherits them; the server calls
 * {@linkcode restrictThisThread} only on a spawner worker's own thread (see `spawner.ts`), never
 * on the JavaScript main thread.
 *
 * Constants are from `<linux/landlock.h>`; the syscall numbers are the generic ones (x86_64 and
 * aarch64 agree).
 *
 * @module
 */

import { fdKind } from "./fs_probe.ts";

const SYS_LANDLOCK_CREATE_RULESET = 444n;
const SYS_LANDLOCK_ADD_RULE = 445n;
const SYS_LANDLOCK_RESTRICT_SELF = 446n;
const LANDLOCK_CREATE_RULESET_VERSION = 1n;
const LANDLOCK_RULE_PATH_BENEATH = 1n;
const LANDLOCK_RULE_NET_PORT = 2n;
/** ABI 4: `bind(2)` of a TCP socket to a port. */
const ACCESS_NET_BIND_TCP = 1n << 0n;
/** ABI 4: `connect(2)` of a TCP socket to a port. */
const ACCESS_NET_CONNECT_TCP = 1n << 1n;
/** What a closed port refuses: connecting to it, and binding it (no `SO_REUSEPORT` squatter). */
const ACCESS_NET_TCP = ACCESS_NET_BIND_TCP | ACCESS_NET_CONNECT_TCP;
/** The Landlock ABI that handles TCP ports. */
export const NET_ABI = 4;

const PR_SET_NO_NEW_PRIVS = 38;
const PR_CAPBSET_DROP = 24;
const O_PATH = 0o10000000;
const O_CLOEXEC = 0o2000000;

/** Access rights on files and directories (`LANDLOCK_ACCESS_FS_*`). */
export const FS = {
  EXECUTE: 1n << 0n,
  WRITE_FILE: 1n << 1n,
  READ_FILE: 1n << 2n,
  READ_DIR: 1n << 3n,
  REMOVE_DIR: 1n << 4n,
  REMOVE_FILE: 1n << 5n,
  MAKE_CHAR: 1n << 6n,
  MAKE_DIR: 1n << 7n,
  MAKE_REG: 1n << 8n,
  MAKE_SOCK: 1n << 9n,
  MAKE_FIFO: 1n << 10n,
  MAKE_BLOCK: 1n << 11n,
  MAKE_SYM: 1n << 12n,
  /** ABI 2: link or rename across directories. */
  REFER: 1n << 13n,
  /** ABI 3. */
  TRUNCATE: 1n << 14n,
  /** ABI 5: `ioctl` on character and block devices. */
  IOCTL_DEV: 1n << 15n,
} as const;

/** Rights that make sense on a file (the kernel refuses the others on a non-directory). */
export const FILE_RIGHTS = FS.EXECUTE | FS.WRITE_FILE | FS.READ_FILE | FS.TRUNCATE | FS.IOCTL_DEV;

/** `LANDLOCK_SCOPE_*` (ABI 6): no abstract unix socket, no signal, outside the domain. */
const SCOPE_ABSTRACT_UNIX_SOCKET = 1n << 0n;
const SCOPE_SIGNAL = 1n << 1n;

/** Capabilities a confined child never gets back by `exec`, even as root. */
const DROPPED_CAPABILITIES = [
  19, // CAP_SYS_PTRACE: the spawner thread shares its domain and its memory is the server's
  16, // CAP_SYS_MODULE
  17, // CAP_SYS_RAWIO
  22, // CAP_SYS_BOOT
];

const SYMBOLS = {
  syscall: { parameters: ["i64", "u64", "u64", "u64", "u64"], result: "i64" },
  prctl: { parameters: ["i32", "u64", "u64", "u64", "u64"], result: "i32" },
  open: { parameters: ["buffer", "i32", "u32"], result: "i32" },
  close: { parameters: ["i32"], result: "i32" },
  __errno_location: { parameters: [], result: "pointer" },
} as const;

let lib: Deno.DynamicLibrary<typeof SYMBOLS> | undefined;
function sys(): Deno.DynamicLibrary<typeof SYMBOLS>["symbols"] {
  lib ??= Deno.dlopen("libc.so.6", SYMBOLS);
  return lib.symbols;
}

function errno(): number {
  const p = sys().__errno_location();
  return p === null ? 0 : new Deno.UnsafePointerView(p).getInt32();
}

function address(buffer: Uint8Array): bigint {
  return BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(buffer)));
}

let abi: number | undefined;

/**
 * The Landlock ABI version this kernel offers, or 0 where there is none (not Linux, no FFI,
 * kernel without Landlock, or Landlock off at boot).
 *
 * @example
 * ```ts ignore
 * if (landlockAbi() < 6) console.warn("no signal scoping");
 * ```
 */
export function landlockAbi(): number {
  if (abi !== undefined) return abi;
  abi = 0;
  try {
    if (Deno.build.os !== "linux") return abi;
    const v = sys().syscall(
      SYS_LANDLOCK_CREATE_RULESET,
      0n,
      0n,
      LANDLOCK_CREATE_RULESET_VERSION,
      0n,
    );
    abi = v > 0n ? Number(v) : 0;
  } catch {
    abi = 0;
  }
  return abi;
}

/** The file rights this ABI knows. */
export function handledRights(version: number): bigint {
  let rights = (1n << 13n) - 1n;
  if (version >= 2) rights |= FS.REFER;
  if (version >= 3) rights |= FS.TRUNCATE;
  if (version >= 5) rights |= FS.IOCTL_DEV;
  return rights;
}

/** One rule: `rights` on `path` and everything beneath it. */
export interface PathRule {
  /** An absolute path; followed if a symbolic link. */
  path: string;
  /** `FS` bits, as a decimal string (rules travel to a worker as JSON-safe data). */
  rights: string;
}

/** Allow `access` on each of `ports` in `ruleset`. */
function allowPorts(
  ruleset: number,
  ports: Iterable<number>,
  access: (port: number) => bigint,
): void {
  const c = sys();
  // struct landlock_net_port_attr { __u64 allowed_access; __u64 port; } (packed)
  const attr = new Uint8Array(16);
  const view = new DataView(attr.buffer);
  const fd = BigInt(ruleset);
  const at = address(attr);
  for (const port of ports) {
    view.setBigUint64(0, access(port), true);
    view.setUint16(8, port, true);
    if (c.syscall(SYS_LANDLOCK_ADD_RULE, fd, LANDLOCK_RULE_NET_PORT, at, 0n) !== 0n) {
      throw new ConfinementError(`landlock_add_rule(port ${port})`, errno());
    }
  }
}

/** Every TCP port but `closed` (port 0 included). */
function* portsExcept(closed: ReadonlySet<number>): Generator<number> {
  for (let port = 0; port < 65536; port++) if (!closed.has(port)) yield port;
}

/** The TCP rights a ruleset handles, and the ports that get a rule with which rights. */
interface NetRules {
  handled: bigint;
  ports: Iterable<number>;
  access: (port: number) => bigint;
}

/**
 * The network part of a ruleset for `closed` ports and a `connectOnly` list:
 *
 * - ports closed: `bind` and `connect` handled, and since Landlock's network rules only allow,
 *   every other port gets a rule of its own (65,534 for two closed ports: ~4.8 MiB of kernel
 *   memory per domain and ~25 ms to merge, measured) allowing `bind` and `connect`, or, with
 *   `connectOnly`, `bind` alone where the port is not in the list;
 * - nothing closed, `connectOnly` given (a `network` section): `connect` alone handled, and one
 *   rule per port of the list (`bind` stays free);
 * - neither: nothing handled, no rule.
 */
function netRules(closed: ReadonlySet<number>, connectOnly: ReadonlySet<number> | null): NetRules {
  if (closed.size > 0) {
    return {
      handled: ACCESS_NET_TCP,
      ports: portsExcept(closed),
      access: (port) =>
        connectOnly === null || connectOnly.has(port) ? ACCESS_NET_TCP : ACCESS_NET_BIND_TCP,
    };
  }
  if (connectOnly !== null) {
    return {
      handled: ACCESS_NET_CONNECT_TCP,
      ports: connectOnly,
      access: () => ACCESS_NET_CONNECT_TCP,
    };
  }
  return { handled: 0n, ports: [], access: () => 0n };
}

/** Why a restriction failed. */
export class ConfinementError extends Error {
  /** The errno of the failing call. */
  readonly errno: number;
  /** A failure of `call`. */
  constructor(call: string, code: number) {
    super(`${call} failed (errno ${code})`);
    this.name = "ConfinementError";
    this.errno = code;
  }
}

/**
 * Restrict the calling thread, for good: no new privileges, the capabilities above out of its
 * bounding set (where it may drop them: as root), and a Landlock domain in which only `rules`
 * grant file access, signals and abstract unix sockets do not leave the domain. A path of a
 * rule that does not exist is skipped. With `closedPorts` (and ABI 4), TCP `connect` to those
 * ports and `bind` of them are refused, on any address: Landlock's network rules only allow, so every other port
 * gets a rule of its own (65,534 of them: about 0.1 s, once per thread, measured). With
 * `connectOnly` (ABI 4), TCP `connect` is refused to every port but those (the egress proxy's:
 * see `server/egress/`), on any address; with no port closed, that takes one rule per port of
 * the list alone. Returns how many path rules were added.
 *
 * @example
 * ```ts ignore
 * // Only ever on a thread of its own: a spawner worker.
 * restrictThisThread([{ path: "/usr", rights: String(FS.READ_FILE | FS.READ_DIR | FS.EXECUTE) }]);
 * ```
 */
export function restrictThisThread(
  rules: readonly PathRule[],
  closedPorts: readonly number[] = [],
  connectOnly: readonly number[] | null = null,
): number {
  const c = sys();
  const version = landlockAbi();
  if (version < 1) throw new ConfinementError("landlock_create_ruleset", 38 /* ENOSYS */);
  if (c.prctl(PR_SET_NO_NEW_PRIVS, 1n, 0n, 0n, 0n) !== 0) {
    throw new ConfinementError("prctl(PR_SET_NO_NEW_PRIVS)", errno());
  }
  for (const cap of DROPPED_CAPABILITIES) c.prctl(PR_CAPBSET_DROP, BigInt(cap), 0n, 0n, 0n);
  const handled = handledRights(version);
  const attr = new Uint8Array(24);
  const view = new DataView(attr.buffer);
  view.setBigUint64(0, handled, true);
  const net = version >= NET_ABI
    ? netRules(new Set(closedPorts), connectOnly && new Set(connectOnly))
    : netRules(new Set(), null);
  view.setBigUint64(8, net.handled, true);
  view.setBigUint64(16, version >= 6 ? SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL : 0n, true);
  const size = version >= 6 ? 24n : 16n;
  const ruleset = Number(c.syscall(SYS_LANDLOCK_CREATE_RULESET, address(attr), size, 0n, 0n));
  if (ruleset < 0) throw new ConfinementError("landlock_create_ruleset", errno());
  let added = 0;
  try {
    // struct landlock_path_beneath_attr { __u64 allowed_access; __s32 parent_fd; } (packed)
    const beneath = new Uint8Array(12);
    const beneathView = new DataView(beneath.buffer);
    const encoder = new TextEncoder();
    for (const rule of rules) {
      const fd = c.open(encoder.encode(rule.path + "\0"), O_PATH | O_CLOEXEC, 0);
      if (fd < 0) continue;
      try {
        let rights = BigInt(rule.rights) & handled;
        if (fdKind(fd) !== "dir") rights &= FILE_RIGHTS;
        if (rights === 0n) continue;
        beneathView.setBigUint64(0, rights, true);
        beneathView.setInt32(8, fd, true);
        const r = c.syscall(
          SYS_LANDLOCK_ADD_RULE,
          BigInt(ruleset),
          LANDLOCK_RULE_PATH_BENEATH,
          address(beneath),
          0n,
        );
        if (r !== 0n) throw new ConfinementError(`landlock_add_rule(${rule.path})`, errno());
        added++;
      } finally {
        c.close(fd);
      }
    }
    allowPorts(ruleset, net.ports, net.access);
    if (c.syscall(SYS_LANDLOCK_RESTRICT_SELF, BigInt(ruleset), 0n, 0n, 0n) !== 0n) {
      throw new ConfinementError("landlock_restrict_self", errno());
    }
  } finally {
    c.close(ruleset);
  }
  return added;
}
