/**
 * Step 4 of the pipeline: a repeated query parameter is refused (400 `duplicate_parameter`),
 * because two layers reading "the" value of `path` could read different ones. Keys ending in
 * `[]` are arrays by the `qs` bracket convention the OpenAI client uses (`status[]=a&status[]=b`)
 * and may repeat.
 *
 * @module
 */

import { ApiError } from "../errors.ts";

/**
 * The first repeated key of a query string, if any.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { repeatedParameter } from "./duplicate_params.ts";
 * assert.equal(repeatedParameter("?path=a&path=b"), "path");
 * assert.equal(repeatedParameter("?path=a&depth=2"), undefined);
 * ```
 */
export function repeatedParameter(search: string): string | undefined {
  if (search.length <= 1) return undefined;
  const seen = new Set<string>();
  for (const key of new URLSearchParams(search).keys()) {
    if (key.endsWith("[]")) continue;
    if (seen.has(key)) return key;
    seen.add(key);
  }
  return undefined;
}

/**
 * The duplicate-parameter step.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { rejectDuplicateParameters } from "./duplicate_params.ts";
 * rejectDuplicateParameters("http://localhost/files/list?path=a"); // passes
 * assert.throws(() => rejectDuplicateParameters("http://localhost/files/list?path=a&path=b"), {
 *   code: "duplicate_parameter",
 * });
 * ```
 */
export function rejectDuplicateParameters(url: string): void {
  const q = url.indexOf("?");
  if (q === -1) return;
  const key = repeatedParameter(url.slice(q));
  if (key !== undefined) {
    throw new ApiError("duplicate_parameter", `Query parameter "${key}" is repeated`, {
      param: key,
    });
  }
}
