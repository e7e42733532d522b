/**
 * Models of the core and commands groups: the capabilities document's parts, path decisions
 * and named commands. Wire names are snake_case; these are their camelCase forms.
 *
 * @module
 */

/** Why an endpoint cannot be called by this identity. */
export type DenialReason = "endpoint_disabled" | "unknown_endpoint" | "missing_scope";

/** A path operation, for {@linkcode PathDecision} and `check`. */
export type PathOperation = "read" | "write" | "delete";

/** The path settings an endpoint applies (`capabilities.paths(endpoint)`). */
export interface EndpointPaths {
  /** Absolute directories the endpoint may touch. */
  allow: string[];
  /** Absolute directories where writes and deletes are refused. */
  readOnly: string[];
  /** How many `paths.deny` patterns apply (the patterns themselves are not revealed). */
  denyCount: number;
  /** How symlinks are treated: `allow`, `within` (target inside the allowed paths) or `deny`. */
  symlinks: "allow" | "within" | "deny";
}

/** Admission limits of an endpoint (`capabilities.limit(endpoint, key)`). */
export interface EndpointLimits {
  /** Largest request body in bytes. */
  bodyBytes?: number;
  /** Requests per minute, per identity. */
  ratePerMinute?: number;
  /** Requests in flight at once, per identity. */
  concurrency?: number;
}

/** One endpoint as the capabilities document describes it for the calling identity. */
export interface EndpointInfo {
  /** The endpoint id. */
  id: string;
  /** HTTP method. */
  method: string;
  /** Route path with `:param` segments. */
  path: string;
  /** Group name (`file_ops`, `process`, …). */
  group: string;
  /** `http` (port 9000) or `pty` (the PTY WebSocket port, 9001). */
  port: "http" | "pty";
  /** Whether the endpoint rule has it on. */
  enabled: boolean;
  /** Whether this identity may call it now (enabled and holding the scopes). */
  allowed: boolean;
  /** Why not, when not allowed. */
  reason: DenialReason | null;
  /** The rule code that decided `enabled` (`policy:…`, `preset:…`, `code:…`, …). */
  rule: string | null;
  /** Scopes the endpoint requires. */
  scopes: string[];
  /** Admission limits. */
  limits: EndpointLimits;
  /** Path settings, for endpoints that take paths. */
  paths: EndpointPaths | null;
  /** Endpoint parameters (for example `languages` of `run_code`), camelCased. */
  params: Record<string, unknown>;
}

/** A group's summary in `capabilities.groupSummary`. */
export interface GroupSummary {
  /** How many of its endpoints are on. */
  enabled: number;
  /** How many endpoints it has. */
  total: number;
}

/** The server's answer to `check(endpoint, path?, op?)`: a decision, nothing is run. */
export interface PathDecision {
  /** The endpoint asked about. */
  endpoint: string;
  /** Whether the call (and the path, when given) would be allowed. */
  allowed: boolean;
  /** The refusal code (`endpoint_disabled`, `missing_scope`, `path_not_allowed`, …). */
  code: string | null;
  /** Why, in words. */
  reason: string;
  /** The rule that disabled the endpoint, for `endpoint_disabled`. */
  rule: string | null;
  /** The normalized absolute path decided on, when a usable path was given. */
  path: string | null;
  /** The operation decided on (the endpoint's own when none was given), when a path was. */
  operation: PathOperation | null;
}

/** One argument of a named command. */
export interface NamedCommandArg {
  /** JSON type: `string`, `number`, `integer`, `boolean`, `object` or `array`. */
  type: string;
  /** Whether the call must give it. */
  required: boolean;
  /** What it is for. */
  description: string | null;
}

/** A named command registered on the server (`GET /commands`). */
export interface NamedCommand {
  /** The name in `POST /commands/<name>`. */
  name: string;
  /** One line. */
  description: string;
  /** Keyword arguments by name. */
  args: Record<string, NamedCommandArg>;
}
