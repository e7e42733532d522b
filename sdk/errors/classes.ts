/**
 * The SDK's error classes.
 *
 * Every error is a {@linkcode SandboxError} with a stable `code` (`E` and four digits), a
 * `message`, a `suggestion` saying what to do next, and a `docsUrl`. Errors raised because of a
 * server answer are {@linkcode ServerAPIError}s (E9000 to E9010) and also carry the HTTP
 * `status`, the server's machine code (`serverCode`), the `endpoint` id and the `rule`.
 *
 * "Is also a": a few server errors are also instances of a generic class, as the contract says
 * (`ServerAuthError` is also an `AuthenticationError`, `EndpointNotAvailableError` is also a
 * `CapabilityNotSupportedError`, `FilePolicyDeniedError` is also a `PermissionDeniedError`, and
 * so on). JavaScript has single inheritance, so the generic classes answer `instanceof` through
 * `Symbol.hasInstance`: `SandboxError[Symbol.hasInstance]` (inherited by every class) first
 * does the ordinary prototype check and then asks the {@linkcode ALSO_A} registry. Catch
 * either name:
 *
 * ```ts
 * import assert from "node:assert/strict";
 * import { FilePolicyDeniedError, PermissionDeniedError, SandboxError } from "@sandbar/sandbar/sdk";
 *
 * const e = new FilePolicyDeniedError("/etc is outside the allowed paths", { status: 403 });
 * assert.ok(e instanceof PermissionDeniedError); // the generic class
 * assert.ok(e instanceof SandboxError); // and the base of them all
 * assert.ok(!(new PermissionDeniedError("x") instanceof FilePolicyDeniedError)); // one way only
 * ```
 *
 * @module
 */

/** Where the docs of a class live: its page in the JSR docs of the `sdk` entry point. */
function docsUrlOf(name: string): string {
  return `https://jsr.io/@sandbar/sandbar/doc/sdk/~/${name}`;
}

/** Options every error class accepts. */
export interface SandboxErrorOptions {
  /** What to do about it; each class has a default. */
  suggestion?: string;
  /** The underlying error. */
  cause?: unknown;
}

/**
 * Generic class → the specific classes that are also instances of it. Filled below, next to
 * the classes; read by `SandboxError[Symbol.hasInstance]`.
 */
// deno-lint-ignore ban-types
export const ALSO_A: Map<Function, Function[]> = new Map();

const ordinaryInstanceOf = Function.prototype[Symbol.hasInstance];

/**
 * The base of every SDK error.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SandboxError } from "@sandbar/sandbar/sdk";
 *
 * const e = new SandboxError("Something failed", { suggestion: "Try again" });
 * assert.equal(e.code, "E0000");
 * assert.equal(e.suggestion, "Try again");
 * assert.equal(e.docsUrl, "https://jsr.io/@sandbar/sandbar/doc/sdk/~/SandboxError");
 * ```
 */
export class SandboxError extends Error {
  /** The stable error code, for example `E9002`. */
  static readonly code: string = "E0000";
  /** The suggestion used when the thrower gives none. */
  static readonly defaultSuggestion: string =
    "See the docs URL of this error for what it means and how to recover.";

  /** The stable error code (`E` and four digits). */
  readonly code: string;
  /** What to do next. */
  readonly suggestion: string;
  /** Where this error class is documented. */
  readonly docsUrl: string;

  /** Make an error with a message and an optional suggestion and cause. */
  constructor(message: string, options: SandboxErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const ctor = new.target as unknown as typeof SandboxError;
    this.name = ctor.name;
    this.code = ctor.code;
    this.suggestion = options.suggestion ?? ctor.defaultSuggestion;
    this.docsUrl = docsUrlOf(ctor.name);
  }

  /** Ordinary `instanceof`, widened by the "is also a" registry {@linkcode ALSO_A}. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (ordinaryInstanceOf.call(this, value)) return true;
    const also = ALSO_A.get(this);
    return also !== undefined && also.some((cls) => ordinaryInstanceOf.call(cls, value));
  }
}

/**
 * Wrong or missing credentials. `ServerAuthError` is also one.
 */
export class AuthenticationError extends SandboxError {
  /** The stable error code of this class. */
  static override readonly code: string = "E2001";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "Check the token or API key you passed (or the environment variable it comes from).";
}

/**
 * An operation was refused for lack of permission. `FilePolicyDeniedError` is also one.
 */
export class PermissionDeniedError extends SandboxError {
  /** The stable error code of this class. */
  static override readonly code: string = "E2003";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "Use a path or resource the sandbox's policy allows, or widen the policy.";
}

/**
 * Bad input: a value the API cannot accept (for example `sendSignal(pid, 2)`: only 15 and 9).
 * The server's 400 answers (`ServerValidationError`) are also one.
 */
export class ValidationError extends SandboxError {
  /** The stable error code of this class. */
  static override readonly code: string = "E1001";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "Fix the argument named in the message; the method's docs list what it accepts.";
}

/**
 * A capability the sandbox does not have (E3004), for example running code without the `code`
 * capability. `EndpointNotAvailableError` is also one.
 */
export class CapabilityNotSupportedError extends SandboxError {
  /** The stable error code of this class. */
  static override readonly code: string = "E3004";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "Create the sandbox with a template or policy that enables this capability.";
}

/**
 * Something named does not exist (a file, a process, a sandbox, a command). The server's 404s
 * (`ServerNotFoundError`, `CommandNotFoundError`) are also one.
 */
export class NotFoundError extends SandboxError {
  /** The stable error code of this class. */
  static override readonly code: string = "E4004";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "Check the name or id; list the resource first to see what exists.";
}

/**
 * A sandbox id that no provider knows (never created, killed, or its lifetime ran out).
 */
export class SandboxNotFoundError extends NotFoundError {
  /** The stable error code of this class. */
  static override readonly code: string = "E4010";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "The sandbox was killed or its timeout ran out; Sandbox.list() shows the live ones, and " +
    "Sandbox.create({ timeout }) sets a longer lifetime.";
}

/**
 * A request or an operation took longer than its deadline. The message says which deadline:
 * the client's per-request `timeout`, or (`ServerTimeoutError`) a deadline the server applied.
 */
export class TimeoutError extends SandboxError {
  /** The stable error code of this class. */
  static override readonly code: string = "E5001";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "Raise the per-request `timeout` of the client (seconds; it is not the sandbox " +
    "lifetime), or pass a longer `timeout` to the operation itself.";
}

/**
 * The server could not be reached (refused, reset, DNS), or a server did not come up in time.
 */
export class ConnectionError extends SandboxError {
  /** The stable error code of this class. */
  static override readonly code: string = "E6001";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "Check that the sandbox is running (sandbox.isRunning()) and that the URL and port are " +
    "right; client.health() answers false rather than throwing.";
}

/**
 * The provider has no such feature (E8004), for example named commands on a provider without
 * an HTTP data plane.
 */
export class ProviderFeatureNotSupportedError extends SandboxError {
  /** The stable error code of this class. */
  static override readonly code: string = "E8004";
  /** The suggestion used when the thrower gives none. */
  static override readonly defaultSuggestion: string =
    "Use a provider that offers this feature (the local provider offers all of them).";
}
