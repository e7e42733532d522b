/**
 * The error classes: codes, "is also a" pairs, and the server-code map against the server's
 * own list of codes.
 */

import assert from "node:assert/strict";
import { ERROR_STATUS } from "../../server/errors.ts";
import {
  AuthenticationError,
  CapabilityNotSupportedError,
  CommandNotFoundError,
  ConflictError,
  ConnectionError,
  EndpointNotAvailableError,
  FilePolicyDeniedError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionDeniedError,
  PolicyDeniedError,
  ProviderFeatureNotSupportedError,
  RateLimitedError,
  SandboxError,
  SandboxNotFoundError,
  ServerAPIError,
  ServerAuthError,
  ServerNotFoundError,
  ServerTimeoutError,
  ServerValidationError,
  TimeoutError,
  ValidationError,
} from "../../sdk/mod.ts";
import { ALSO_A } from "../../sdk/errors/classes.ts";
import { errorFromResponse, SERVER_ERROR_CLASSES } from "../../sdk/errors/server_codes.ts";

Deno.test("every server error code maps to exactly one class, and no unknown code is mapped", () => {
  const serverCodes = Object.keys(ERROR_STATUS).sort();
  assert.deepEqual(Object.keys(SERVER_ERROR_CLASSES).sort(), serverCodes);
  for (const code of serverCodes) {
    const cls = SERVER_ERROR_CLASSES[code];
    const e = errorFromResponse(ERROR_STATUS[code as keyof typeof ERROR_STATUS], {
      error: "x",
      type: "X",
      code,
    }, new Headers());
    assert.equal(e.constructor, cls, code);
    assert.equal(e.serverCode, code);
    assert.ok(e instanceof ServerAPIError && e instanceof SandboxError);
    assert.ok(e.suggestion.length > 10, `${code} has no suggestion`);
  }
});

Deno.test("the contract's codes", () => {
  const expected: [new (m: string) => SandboxError, string][] = [
    [CapabilityNotSupportedError, "E3004"],
    [ProviderFeatureNotSupportedError, "E8004"],
    [ServerAPIError, "E9000"],
    [ServerAuthError, "E9001"],
    [PolicyDeniedError, "E9002"],
    [FilePolicyDeniedError, "E9002"],
    [EndpointNotAvailableError, "E9003"],
    [PayloadTooLargeError, "E9004"],
    [RateLimitedError, "E9005"],
  ];
  for (const [cls, code] of expected) {
    const e = new cls("m");
    assert.equal(e.code, code, cls.name);
    assert.equal(e.name, cls.name);
    assert.equal(e.message, "m");
    assert.match(e.docsUrl, new RegExp(`/~/${cls.name}$`));
  }
  const codes = [
    SandboxError,
    ValidationError,
    AuthenticationError,
    PermissionDeniedError,
    CapabilityNotSupportedError,
    NotFoundError,
    SandboxNotFoundError,
    TimeoutError,
    ConnectionError,
    ProviderFeatureNotSupportedError,
    ServerAPIError,
    ServerAuthError,
    PolicyDeniedError,
    EndpointNotAvailableError,
    PayloadTooLargeError,
    RateLimitedError,
    CommandNotFoundError,
    ServerNotFoundError,
    ServerValidationError,
    ConflictError,
    ServerTimeoutError,
  ].map((c) => c.code);
  assert.equal(
    new Set(codes).size,
    codes.length,
    "codes are unique (FilePolicyDeniedError shares E9002 with its parent)",
  );
});

Deno.test("'is also a' pairs hold for instanceof, and only them", () => {
  assert.ok(new ServerAuthError("m") instanceof AuthenticationError);
  assert.ok(new EndpointNotAvailableError("m") instanceof CapabilityNotSupportedError);
  const file = new FilePolicyDeniedError("m", { scope: null });
  assert.ok(file instanceof PolicyDeniedError);
  assert.ok(file instanceof PermissionDeniedError);
  assert.ok(new CommandNotFoundError("m") instanceof NotFoundError);
  assert.ok(new ServerNotFoundError("m") instanceof NotFoundError);
  assert.ok(new ServerValidationError("m") instanceof ValidationError);
  assert.ok(new ServerTimeoutError("m") instanceof TimeoutError);
  // Not the other way round, and not across families.
  assert.ok(!(new AuthenticationError("m") instanceof ServerAuthError));
  assert.ok(!(new PolicyDeniedError("m") instanceof PermissionDeniedError));
  assert.ok(!(new ServerAuthError("m") instanceof PolicyDeniedError));
  assert.ok(!(new SandboxNotFoundError("m") instanceof ServerAPIError));
  assert.ok(new SandboxNotFoundError("m") instanceof NotFoundError);
  assert.ok(!(new Error("m") instanceof SandboxError));
  assert.ok(!((null as unknown) instanceof AuthenticationError));
  for (const [generic, specifics] of ALSO_A) {
    for (const s of specifics) assert.ok(!(generic.prototype instanceof s));
  }
});

Deno.test("errorFromResponse reads the flat body, the /v1/ envelope, Retry-After and bodies without a code", () => {
  const rate = errorFromResponse(
    429,
    { error: "slow", code: "rate_limited", retry_after: 9 },
    new Headers({ "retry-after": "7" }),
  );
  assert.ok(rate instanceof RateLimitedError);
  assert.equal(rate.retryAfter, 7);
  const v1 = errorFromResponse(404, {
    error: { message: "off", type: "not_found_error", param: null, code: "endpoint_disabled" },
  }, new Headers());
  assert.ok(v1 instanceof EndpointNotAvailableError);
  assert.equal(v1.message, "off");
  const route = errorFromResponse(
    404,
    { error: "Not found: /nope", type: "NotFoundError" },
    new Headers(),
  );
  assert.ok(route instanceof ServerNotFoundError);
  const html = errorFromResponse(502, "<html>Bad gateway</html>", new Headers());
  assert.equal(html.constructor, ServerAPIError);
  assert.match(html.message, /502/);
  const unknown = errorFromResponse(403, { error: "new", code: "brand_new_code" }, new Headers());
  assert.equal(unknown.constructor, ServerAPIError);
  assert.equal(unknown.serverCode, "brand_new_code");
});
