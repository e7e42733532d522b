/**
 * Named policy starting points. A preset decides which endpoints are on before the file's own
 * `endpoints` entries and the environment switches are applied; what a preset turns off is
 * reported with the rule `preset:<name>`.
 *
 * - `standard` (the default): every group on except the opt-in ones (browser, agents).
 * - `readonly`: like standard, but nothing that writes files, runs processes or opens terminals.
 * - `minimal`: only the core and commands groups.
 * - `open`: every group on, the opt-in ones included. For trusted, local use.
 *
 * @module
 */

import { ENDPOINTS, type EndpointSpec } from "../endpoints.ts";

/** The preset names. */
export type PresetName = "standard" | "readonly" | "minimal" | "open";

const WRITES: ReadonlySet<string> = new Set([
  "files_mkdir",
  "files_delete",
  "files_move",
  "files_upload",
  "files_upload_legacy",
  "shell",
  "shell_stream",
  "process_start",
  "process_signal",
  "process_stdin",
  "pty_create",
  "pty_resize",
  "pty_delete",
  "pty_connect",
  "system_set_env",
  "run_code",
]);

/**
 * What a preset says of one endpoint: `true` on, `false` off, `undefined` no opinion (the
 * opt-in default then applies).
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { presetSays } from "./presets.ts";
 * import { ENDPOINTS_BY_ID } from "../endpoints.ts";
 * assert.equal(presetSays("readonly", ENDPOINTS_BY_ID.get("shell")!), false);
 * assert.equal(presetSays("readonly", ENDPOINTS_BY_ID.get("files_list")!), undefined); // default
 * assert.equal(presetSays("open", ENDPOINTS_BY_ID.get("shell")!), true);
 * ```
 */
export function presetSays(preset: PresetName, endpoint: EndpointSpec): boolean | undefined {
  switch (preset) {
    case "standard":
      return undefined;
    case "readonly":
      return WRITES.has(endpoint.id) ? false : undefined;
    case "minimal":
      return endpoint.group === "core" || endpoint.group === "commands" ? undefined : false;
    case "open":
      return true;
  }
}

/** Every endpoint id a preset turns off; used by the docs. */
export function presetDisabled(preset: PresetName): string[] {
  return ENDPOINTS.filter((e) => presetSays(preset, e) === false).map((e) => e.id);
}
