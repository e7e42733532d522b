/**
 * JSON-RPC 2.0 envelopes as the protocol uses them: the only place their fields are written. The
 * builders return one serialized line (without the `\n`, which framing adds); the schema
 * factories wrap the protocol's own params, result and error schemas in the envelope, so each
 * message is still validated by one strict schema (and its compiled twin) in one pass.
 *
 * The protocol narrows JSON-RPC in two ways: ids are integers of at least 1, chosen by the host,
 * and an error is the protocol's `{code, message}` with a string code rather than JSON-RPC's
 * numeric one.
 *
 * @module
 */
import { z } from "zod";

/** The value of every envelope's `jsonrpc` field. */
export const JSONRPC_VERSION = "2.0";

/**
 * The line of a request.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { requestLine } from "./jsonrpc.ts";
 * assert.equal(
 *   requestLine(1, "describe", { protocols: [1] }),
 *   '{"jsonrpc":"2.0","id":1,"method":"describe","params":{"protocols":[1]}}',
 * );
 * ```
 */
export function requestLine(id: number, method: string, params: unknown): string {
  return JSON.stringify({ jsonrpc: JSONRPC_VERSION, id, method, params });
}

/**
 * The line of a notification.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { notificationLine } from "./jsonrpc.ts";
 * assert.equal(
 *   notificationLine("cancel", { id: 3 }),
 *   '{"jsonrpc":"2.0","method":"cancel","params":{"id":3}}',
 * );
 * ```
 */
export function notificationLine(method: string, params: unknown): string {
  return JSON.stringify({ jsonrpc: JSONRPC_VERSION, method, params });
}

/**
 * The line of a response carrying a result.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resultLine } from "./jsonrpc.ts";
 * assert.equal(resultLine(2, { covers: true }), '{"jsonrpc":"2.0","id":2,"result":{"covers":true}}');
 * ```
 */
export function resultLine(id: number, result: unknown): string {
  return JSON.stringify({ jsonrpc: JSONRPC_VERSION, id, result });
}

/**
 * The line of a response carrying an error.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { errorLine } from "./jsonrpc.ts";
 * assert.deepEqual(JSON.parse(errorLine(2, { code: "budget", message: "out of depth" })), {
 *   jsonrpc: "2.0",
 *   id: 2,
 *   error: { code: "budget", message: "out of depth" },
 * });
 * ```
 */
export function errorLine(id: number, error: unknown): string {
  return JSON.stringify({ jsonrpc: JSONRPC_VERSION, id, error });
}

const version = z.literal(JSONRPC_VERSION);

/** A request id: an integer of at least 1. */
export const RequestIdSchema: z.ZodNumber = z.number().int().min(1);

/** The strict schema of a request to `method` with params of `params`. */
export function requestSchema<M extends string, P extends z.ZodType>(method: M, params: P) {
  return z.strictObject({
    jsonrpc: version,
    id: RequestIdSchema,
    method: z.literal(method),
    params,
  });
}

/** The strict schema of a notification `method` with params of `params`. */
export function notificationSchema<M extends string, P extends z.ZodType>(method: M, params: P) {
  return z.strictObject({ jsonrpc: version, method: z.literal(method), params });
}

/**
 * The strict schema of a response whose error is `error`. The result is left unchecked here: its
 * schema depends on the method it answers, which only the caller's pending request knows.
 */
export function responseSchema<E extends z.ZodType>(error: E) {
  return z.strictObject({
    jsonrpc: version,
    id: RequestIdSchema,
    result: z.unknown().optional(),
    error: error.optional(),
  }).refine((r) => ("result" in r) !== ("error" in r), {
    message: "a response carries exactly one of result and error",
  });
}
