/**
 * The SDK's errors: {@linkcode SandboxError} and its classes, the server errors
 * (E9000 to E9010), and the map from server machine codes to classes.
 *
 * @module
 */

export {
  ALSO_A,
  AuthenticationError,
  CapabilityNotSupportedError,
  ConnectionError,
  NotFoundError,
  PermissionDeniedError,
  ProviderFeatureNotSupportedError,
  SandboxError,
  type SandboxErrorOptions,
  SandboxNotFoundError,
  TimeoutError,
  ValidationError,
} from "./classes.ts";
export {
  CommandNotFoundError,
  ConflictError,
  EndpointNotAvailableError,
  FilePolicyDeniedError,
  PayloadTooLargeError,
  PolicyDeniedError,
  RateLimitedError,
  ServerAPIError,
  type ServerAPIErrorOptions,
  ServerAuthError,
  ServerNotFoundError,
  ServerTimeoutError,
  ServerValidationError,
} from "./server.ts";
export {
  errorFromResponse,
  parseRetryAfter,
  SERVER_ERROR_CLASSES,
  type ServerErrorClass,
} from "./server_codes.ts";
