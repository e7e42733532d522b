/**
 * The claim of a pooled server (`--await-claim`): a server started ahead of need (a local
 * sandbox in the warm pool, `sdk/providers/local/pool.ts`) listens, loads and prepares its
 * confinement with tokens only its supervisor holds, then reads one line from its standard
 * input, which only the supervisor writes:
 *
 * ```json
 * {"tokens":{"default":"<new token>","access":"<new token>"},"env":{"NAME":"value"}}
 * ```
 *
 * Every identity named gets its new token (the old one stops working at once), and the
 * variables join the environment of every process started from then on. It then prints
 * `{"event":"claimed"}` on stdout. The tokens of a claim were minted by the claiming program
 * a moment before: nothing that ran before the claim knew them. A line that is not a valid
 * claim ends the server (the supervisor then ends the sandbox): a pooled server is never
 * handed out half claimed.
 *
 * @module
 */

import { environmentStore } from "./process/environment.ts";
import type { ServerState } from "./state.ts";

/** Shortest token a claim may give (as the policy requires). */
const MIN_TOKEN_LENGTH = 16;

/** What a claim carries. */
export interface Claim {
  /** New tokens by identity id. */
  tokens: Record<string, string>;
  /** Environment variables for the processes started from now on. */
  env: Record<string, string>;
}

/**
 * Parse one claim line; throws naming what is wrong.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseClaim } from "./claim.ts";
 * const claim = parseClaim('{"tokens":{"default":"0123456789abcdefXYZ"},"env":{"A":"1"}}');
 * assert.equal(claim.env.A, "1");
 * assert.throws(() => parseClaim('{"tokens":{"default":"short"},"env":{}}'), /too short/);
 * assert.throws(() => parseClaim('{"tokens":{},"env":{},"more":1}'), /unknown field more/);
 * ```
 */
export function parseClaim(line: string): Claim {
  const value = JSON.parse(line) as Record<string, unknown>;
  if (typeof value !== "object" || value === null) throw new Error("a claim is an object");
  for (const key of Object.keys(value)) {
    if (key !== "tokens" && key !== "env") throw new Error(`claim: unknown field ${key}`);
  }
  const strings = (field: "tokens" | "env") => {
    const v = value[field] ?? {};
    if (typeof v !== "object" || v === null || Array.isArray(v)) {
      throw new Error(`claim: ${field} is an object of strings`);
    }
    for (const [k, s] of Object.entries(v)) {
      if (typeof s !== "string") throw new Error(`claim: ${field}.${k} is not a string`);
    }
    return v as Record<string, string>;
  };
  const tokens = strings("tokens");
  for (const [id, token] of Object.entries(tokens)) {
    if (token.length < MIN_TOKEN_LENGTH) throw new Error(`claim: the token of ${id} is too short`);
  }
  return { tokens, env: strings("env") };
}

/**
 * Apply a claim to a running server: new tokens for its identities, variables for its
 * processes. Throws (changing nothing) when an identity is unknown or a variable reserved.
 */
export function applyClaim(state: ServerState, claim: Claim): void {
  const identities = state.policy.identities;
  for (const id of Object.keys(claim.tokens)) {
    if (!identities.some((i) => i.id === id)) throw new Error(`claim: no identity ${id}`);
  }
  // The store refuses reserved names itself; checked first so a refusal changes nothing.
  const store = environmentStore(state);
  const snapshot = store.snapshot();
  try {
    store.apply(claim.env);
  } catch (e) {
    store.apply(Object.fromEntries(Object.keys(claim.env).map((k) => [k, snapshot[k] ?? null])));
    throw e;
  }
  for (const identity of identities) {
    const token = claim.tokens[identity.id];
    if (token !== undefined) identity.token = token;
  }
}

/** Read the claim from `input` (the server's stdin), apply it, and say so on stdout. */
export async function awaitClaim(
  state: ServerState,
  input: ReadableStream<Uint8Array> = Deno.stdin.readable,
): Promise<void> {
  const reader = input.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  try {
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("standard input ended before a claim");
      text += value;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  applyClaim(state, parseClaim(text.slice(0, text.indexOf("\n"))));
  console.log(JSON.stringify({ event: "claimed" }));
}
