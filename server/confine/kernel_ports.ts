/**
 * Private kernels: each identity's Jupyter kernels listen on loopback TCP ports from a block of
 * its own, and every confinement of any other identity (and of the server's helpers and
 * Chromium) is refused `connect` and `bind` on that block by Landlock's network rules (ABI 4).
 * ZeroMQ's PUB socket needs no key to subscribe, so a port that can be reached is output that can
 * be read; a port that cannot be reached cannot be read, subscribed to, or squatted.
 *
 * Why ports and not ZeroMQ `ipc` sockets: ipykernel binds `ipc`, but Deno's kernel (the
 * JavaScript and TypeScript contexts) accepts only TCP (`invalid host` for an `ipc` connection
 * file, measured with Deno 2.9.6), and Landlock does not govern `connect` to a named unix socket
 * on this kernel. One mechanism covers every kernel language, and the transport (and so a warm
 * run's cost) is unchanged.
 *
 * Blocks are laid out by the identity's place in the policy, below Linux's default ephemeral
 * range (32768 up), so a kernel port never collides with the local port of an outgoing
 * connection: block `b` is `20000 + b * 160` to `20000 + (b + 1) * 160 - 1`, 160 being 32
 * contexts of 5 ports each, and `b` is the identity's place plus a rotation each server draws at
 * random, so two servers on one host (each with a `default` identity) rarely share a block.
 *
 * @module
 */

/** The first port of the first identity's block. */
export const KERNEL_PORT_BASE = 20000;
/** Ports in one identity's block: 32 contexts (`MAX_CONTEXTS`) of 5 ZeroMQ channels. */
export const KERNEL_PORTS_PER_IDENTITY = 160;
/** The ports above the blocks start Linux's default ephemeral range. */
const KERNEL_PORT_END = 32768;

/** The identities that can have blocks. */
export const MAX_KERNEL_IDENTITIES = Math.floor(
  (KERNEL_PORT_END - KERNEL_PORT_BASE) / KERNEL_PORTS_PER_IDENTITY,
);

/** A block of ports: `first` to `last`, both included. */
export interface PortBlock {
  /** The block's first port. */
  first: number;
  /** The block's last port. */
  last: number;
}

/** A server's rotation of the blocks: drawn once, at random. */
export function drawKernelRotation(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0] % MAX_KERNEL_IDENTITIES;
}

/**
 * The block of `identity` among `identities` (the policy's, in order) under a server's
 * `rotation`, or null when it is not one of them (the server's own helpers) or past the last
 * block.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { kernelPortBlock } from "./kernel_ports.ts";
 * assert.deepEqual(kernelPortBlock(["default", "other"], "other"), { first: 20160, last: 20319 });
 * assert.deepEqual(kernelPortBlock(["default", "other"], "other", 2), { first: 20480, last: 20639 });
 * assert.equal(kernelPortBlock(["default"], "server"), null);
 * ```
 */
export function kernelPortBlock(
  identities: readonly string[],
  identity: string,
  rotation = 0,
): PortBlock | null {
  const i = identities.indexOf(identity);
  if (i < 0 || i >= MAX_KERNEL_IDENTITIES) return null;
  const block = (i + rotation) % MAX_KERNEL_IDENTITIES;
  const first = KERNEL_PORT_BASE + block * KERNEL_PORTS_PER_IDENTITY;
  return { first, last: first + KERNEL_PORTS_PER_IDENTITY - 1 };
}

/**
 * Every kernel port a confinement of `identity` must not reach: the blocks of all the other
 * identities (all of them for `null`, the server's helpers and Chromium), or of those among them
 * in `holders` (the identities that may start kernels) when given.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { foreignKernelPorts } from "./kernel_ports.ts";
 * const closed = foreignKernelPorts(["default", "other"], "default");
 * assert.equal(closed.length, 160);
 * assert.equal(closed[0], 20160);
 * assert.equal(foreignKernelPorts(["default", "other"], null).length, 320);
 * assert.equal(foreignKernelPorts(["default", "access"], "default", 0, new Set(["default"])).length, 0);
 * ```
 */
export function foreignKernelPorts(
  identities: readonly string[],
  identity: string | null,
  rotation = 0,
  holders?: ReadonlySet<string>,
): number[] {
  const ports: number[] = [];
  for (const other of identities) {
    if (other === identity || (holders && !holders.has(other))) continue;
    const block = kernelPortBlock(identities, other, rotation);
    if (!block) continue;
    for (let p = block.first; p <= block.last; p++) ports.push(p);
  }
  return ports;
}
