/**
 * A synchronous SHA-256 of text, as lowercase hex, without `node:crypto`: loading Deno's Node
 * crypto layer costs the process that imports it about 25–60 ms of CPU at start (measured with a
 * CPU profile of the server's start; `scripts/bench/sandbox.ts`), which the server's start path
 * cannot afford for two short digests (the policy's revision, an egress socket's name). Web
 * Crypto's digest is asynchronous, and those callers are not. The digest is `@noble/hashes`
 * (audited, dependency-free, plain ESM).
 *
 * @module
 */

import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";

const encoder = new TextEncoder();

/**
 * The SHA-256 of `parts` joined as they are (no separator), in hex.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { sha256Hex } from "./sha256_hex.ts";
 * assert.equal(
 *   sha256Hex("a", "bc"),
 *   "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
 * );
 * ```
 */
export function sha256Hex(...parts: string[]): string {
  return bytesToHex(sha256(encoder.encode(parts.join(""))));
}
