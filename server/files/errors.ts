/**
 * File-system errors as API errors: what the kernel said, with the contract's codes, so a
 * failed file operation never surfaces as a bare 500.
 *
 * @module
 */

import { ApiError } from "../errors.ts";

/**
 * The API error for an error thrown by a file operation (an `ApiError` passes unchanged).
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { fileSystemError } from "./errors.ts";
 * let thrown: unknown;
 * try {
 *   Deno.lstatSync("/nonexistent");
 * } catch (e) {
 *   thrown = e;
 * }
 * assert.equal(fileSystemError(thrown).code, "not_found");
 * assert.equal(fileSystemError(thrown).status, 404);
 * ```
 */
export function fileSystemError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof Deno.errors.NotCapable) {
    // The Deno permission backstop refused what the guards let through: say so, loudly.
    return new ApiError("path_not_allowed", "The server's own permissions refuse this path", {
      cause: e,
    });
  }
  const err = e as { code?: string; message?: string };
  const message = err.message?.replace(/ \(os error \d+\)/, "") ?? String(e);
  switch (err.code) {
    case "ENOENT":
      return new ApiError("not_found", message, { cause: e });
    case "EEXIST":
      return new ApiError("file_exists", message, { cause: e });
    case "ENOTEMPTY":
    case "EISDIR":
    case "ENOTDIR":
    case "EBUSY":
    case "ETXTBSY":
    case "EACCES":
    case "EPERM":
    case "EROFS":
      return new ApiError("conflict", message, { cause: e });
    case "ELOOP":
      // Only a link where none may be (a pinned directory's path) or a loop of links.
      return new ApiError("symlink_denied", `A link is in the way: ${message}`, { cause: e });
    case "EXDEV":
    case "EINVAL":
    case "ENAMETOOLONG":
      return new ApiError("invalid_arguments", message, { cause: e });
    case "ENOSPC":
    case "EDQUOT":
      return new ApiError("payload_too_large", `No space left: ${message}`, { cause: e });
  }
  return new ApiError("internal", `File operation failed: ${message}`, { cause: e });
}
