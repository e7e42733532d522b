/**
 * The engine manifest: a JSONC file with one entry per engine, giving the command that starts it
 * and the Description fields it must match.
 *
 * ```jsonc
 * {
 *   "engines": {
 *     "explorer": {
 *       // the Description's name and version must match; the name defaults to the key
 *       "name": "explorer",
 *       "version": "^0.1.0",         // a semver range; an exact version matches only itself
 *       // argv, no shell; a first element "deno" means the Deno running the host
 *       "command": ["deno", "run", "explorer.ts"],
 *       "cwd": ".",                  // relative to the manifest's directory (the default)
 *       "env": { "EXPLORER_LOG": "1" },
 *       "protocol": 1,
 *       "answers": ["outcomes", "holds", "satisfiable"],
 *       "subjects": ["action"],
 *       "bounds": ["depth", "steps", "runs"],
 *       "witness": "schedule",
 *       "model": ["graphs:1"],
 *       "authority": "proved",
 *       "concurrent": false
 *     }
 *   }
 * }
 * ```
 *
 * The child gets a clean environment: only `HOME LOGNAME PATH SHELL TERM USER LANG TMPDIR DENO_DIR
 * NO_COLOR` from the host (when set) plus the entry's `env`, so host secrets do not leak into an
 * engine by default.
 *
 * @module
 */
import { parse, type ParseError, printParseErrorCode } from "jsonc-parser";
import { dirname, resolve } from "node:path";
import { validRange } from "semver";
import { z } from "zod";
import { EngineError } from "./errors.ts";
import {
  BOUND_NAMES,
  MODEL_FORM_PATTERN,
  QUESTION_KINDS,
  STRENGTHS,
  WITNESS_KINDS,
} from "./enums.ts";
import { formatIssues } from "./validate.ts";
import type { Description } from "./types.ts";

/**
 * One engine of a manifest, with paths resolved: how to start it, and the Description fields it
 * must match (compared as in `compat.ts`). The entry's `bounds` are the bounds `run` sends, its
 * `model` the forms the model is sent in, and its `authority` caps every verdict (absent caps at
 * `observed`).
 */
export interface EngineEntry extends Omit<Description, "name" | "version"> {
  /** The engine's name in the manifest (its key). */
  name: string;
  /** The name its Description must give; absent means {@linkcode EngineEntry.name}. */
  describedName?: string;
  /**
   * The versions its Description may give: a semver range (`^1.2.0`, `>=1 <3`; an exact version
   * matches only itself). Absent accepts any version.
   */
  version?: string;
  /** Program and arguments; no shell is involved. */
  command: string[];
  /** Working directory, absolute. */
  cwd: string;
  /** Variables added to the child's environment. */
  env: Record<string, string>;
}

/** A loaded manifest. */
export interface Manifest {
  /** Where it was read from, when it was read from a file. */
  path?: string;
  /** Its engines by name. */
  engines: Record<string, EngineEntry>;
}

/**
 * The model forms the host serves; `rdf` and other graph versions are refused.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SERVED_MODEL_FORMS } from "./mod.ts";
 * assert.deepEqual(SERVED_MODEL_FORMS, ["sources", "graphs:1"]);
 * ```
 */
export const SERVED_MODEL_FORMS: readonly string[] = ["sources", "graphs:1"];

const PASSED_ENV = [
  "HOME",
  "LOGNAME",
  "PATH",
  "SHELL",
  "TERM",
  "USER",
  "LANG",
  "TMPDIR",
  "DENO_DIR",
  "NO_COLOR",
];

const entrySchema = z.strictObject({
  name: z.string().min(1).optional(),
  version: z.string().min(1).refine((range) => validRange(range) !== null, {
    message: "expected a semver version or range, like 1.2.0, ^1.2.0 or >=1 <3",
  }).optional(),
  command: z.array(z.string().min(1)).min(1),
  cwd: z.string().optional(),
  env: z.record(z.string(), z.string()).optional(),
  protocol: z.number().int().min(1),
  answers: z.array(z.enum(QUESTION_KINDS)).min(1),
  subjects: z.array(z.string()).optional(),
  bounds: z.array(z.enum(BOUND_NAMES)).optional(),
  witness: z.enum(WITNESS_KINDS).optional(),
  model: z.array(
    z.string().regex(MODEL_FORM_PATTERN).refine((form) => SERVED_MODEL_FORMS.includes(form), {
      message: `the host serves only ${SERVED_MODEL_FORMS.join(" and ")}`,
    }),
  ).optional(),
  authority: z.enum(STRENGTHS).optional(),
  concurrent: z.boolean().optional(),
});
const manifestSchema = z.strictObject({ engines: z.record(z.string().min(1), entrySchema) });

/**
 * Parses manifest text. Relative `cwd` values resolve against `baseDir`.
 *
 * @throws {EngineError} with code `manifest`, naming each problem by its path.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseManifest } from "./mod.ts";
 * const manifest = parseManifest(
 *   `{ "engines": { "e": { "command": ["deno", "run", "e.ts"], "protocol": 1, "answers": ["holds"] } } }`,
 *   "/srv/engines",
 * );
 * assert.equal(manifest.engines.e.cwd, "/srv/engines");
 * // "deno" is the Deno running the host, never one found on PATH.
 * assert.deepEqual(manifest.engines.e.command, [Deno.execPath(), "run", "e.ts"]);
 * assert.throws(
 *   () => parseManifest(`{ "engines": { "e": { "command": [], "protocol": 1 } } }`, "/"),
 *   /engines\.e\.command: Too small/,
 * );
 * ```
 */
export function parseManifest(text: string, baseDir: string, source = "manifest"): Manifest {
  const errors: ParseError[] = [];
  const raw = parse(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length > 0) {
    const where = errors.map((e) =>
      `${printParseErrorCode(e.error)} at ${position(text, e.offset)}`
    );
    throw new EngineError("manifest", source, `not valid JSONC: ${where.join("; ")}`);
  }
  const parsed = manifestSchema.safeParse(raw);
  if (!parsed.success) {
    throw new EngineError("manifest", source, formatIssues(parsed.error, ""));
  }
  const engines: Record<string, EngineEntry> = {};
  for (const [name, entry] of Object.entries(parsed.data.engines)) {
    const [program, ...args] = entry.command;
    const { name: describedName, ...rest } = entry;
    engines[name] = {
      ...rest,
      name,
      ...(describedName === undefined ? {} : { describedName }),
      // Deno on a fresh machine may be nowhere on PATH (npx), so "deno" means this Deno.
      command: [program === "deno" ? Deno.execPath() : program, ...args],
      cwd: resolve(baseDir, entry.cwd ?? "."),
      env: entry.env ?? {},
    };
  }
  return { engines };
}

/**
 * Reads and parses a manifest file; relative `cwd` values resolve against the file's directory.
 *
 * @throws {EngineError} with code `manifest` when the file cannot be read or is invalid.
 */
export async function loadManifest(path: string): Promise<Manifest> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    throw new EngineError("manifest", path, `cannot read it: ${(error as Error).message}`);
  }
  return { ...parseManifest(text, dirname(resolve(path)), path), path };
}

/**
 * The entry named `name`.
 *
 * @throws {EngineError} with code `manifest` listing the names there are.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { manifestEntry, parseManifest } from "./mod.ts";
 * const manifest = parseManifest(
 *   `{ "engines": { "explorer": { "command": ["./explorer"], "protocol": 1, "answers": ["holds"] } } }`,
 *   "/srv/engines",
 * );
 * assert.deepEqual(manifestEntry(manifest, "explorer").answers, ["holds"]);
 * assert.throws(() => manifestEntry(manifest, "explore"), /no such engine in the manifest \(it has: explorer\)/);
 * ```
 */
export function manifestEntry(manifest: Manifest, name: string): EngineEntry {
  const entry = Object.hasOwn(manifest.engines, name) ? manifest.engines[name] : undefined;
  if (entry) return entry;
  const names = Object.keys(manifest.engines).join(", ") || "none";
  throw new EngineError("manifest", name, `no such engine in the manifest (it has: ${names})`);
}

/** The child's whole environment: the passed-through host variables plus the entry's own. */
export function engineEnv(entry: EngineEntry): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of PASSED_ENV) {
    const value = Deno.env.get(key);
    if (value !== undefined) env[key] = value;
  }
  return { ...env, ...entry.env };
}

function position(text: string, offset: number): string {
  const before = text.slice(0, offset).split("\n");
  return `line ${before.length}, column ${before[before.length - 1].length + 1}`;
}
