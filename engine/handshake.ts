/**
 * The handshake check: an engine's Description against its manifest entry, field by field. Array
 * fields compare as sets; an absent field compares as its default (empty list, witness `none`,
 * not concurrent), so the entry and the engine must agree on every field the contract lists.
 *
 * @module
 */
import { satisfies, valid } from "semver";
import type { EngineEntry } from "./manifest.ts";
import type { Description } from "./types.ts";

/**
 * The protocol versions this host serves.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SERVED_PROTOCOLS } from "./mod.ts";
 * assert.deepEqual(SERVED_PROTOCOLS, [1]);
 * ```
 */
export const SERVED_PROTOCOLS: readonly number[] = [1];

/**
 * Every way `description` differs from `entry`, one message per field; empty when they match.
 * The name must be the entry's `describedName` (by default its key), and the version must
 * satisfy the entry's `version` range when it gives one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { descriptionMismatches, type EngineEntry } from "./mod.ts";
 * const entry: EngineEntry = {
 *   name: "e", command: ["e"], cwd: "/", env: {}, protocol: 1, answers: ["holds"],
 * };
 * const problems = descriptionMismatches(entry, {
 *   name: "e", version: "1", protocol: 1, answers: ["holds", "sweep"],
 * });
 * assert.deepEqual(problems, [
 *   "answers: the manifest says [holds], the engine says [holds, sweep] (unexpected sweep)",
 * ]);
 * ```
 */
export function descriptionMismatches(entry: EngineEntry, description: Description): string[] {
  const problems: string[] = [];
  const wantedName = entry.describedName ?? entry.name;
  if (description.name !== wantedName) {
    problems.push(`name: the manifest says ${wantedName}, the engine says ${description.name}`);
  }
  if (entry.version !== undefined && !versionAccepted(entry.version, description.version)) {
    problems.push(
      `version: the manifest accepts ${entry.version}, the engine says ${description.version}`,
    );
  }
  if (!SERVED_PROTOCOLS.includes(description.protocol)) {
    problems.push(
      `protocol: the engine speaks ${description.protocol}, the host serves ${
        SERVED_PROTOCOLS.join(", ")
      }`,
    );
  }
  const scalars = [
    ["protocol", entry.protocol, description.protocol],
    ["witness", entry.witness ?? "none", description.witness ?? "none"],
    ["authority", entry.authority ?? "(none)", description.authority ?? "(none)"],
    ["concurrent", entry.concurrent ?? false, description.concurrent ?? false],
  ] as const;
  for (const [field, wanted, got] of scalars) {
    if (wanted !== got) {
      problems.push(`${field}: the manifest says ${wanted}, the engine says ${got}`);
    }
  }
  const sets = [
    ["answers", entry.answers, description.answers],
    ["subjects", entry.subjects, description.subjects],
    ["bounds", entry.bounds, description.bounds],
    ["model", entry.model, description.model],
  ] as const;
  for (const [field, wanted = [], got = []] of sets) {
    const missing = wanted.filter((x: string) => !(got as readonly string[]).includes(x));
    const extra = got.filter((x: string) => !(wanted as readonly string[]).includes(x));
    if (missing.length > 0 || extra.length > 0) {
      const parts = [
        missing.length > 0 ? `missing ${missing.join(", ")}` : "",
        extra.length > 0 ? `unexpected ${extra.join(", ")}` : "",
      ].filter(Boolean);
      problems.push(
        `${field}: the manifest says [${wanted.join(", ")}], the engine says [${got.join(", ")}] (${
          parts.join("; ")
        })`,
      );
    }
  }
  return problems;
}

/** Whether `version` is in `range`; a version that is not semver passes only an equal string. */
function versionAccepted(range: string, version: string): boolean {
  if (range === version) return true;
  return valid(version) !== null && satisfies(version, range);
}
