/**
 * The files generated from the endpoint table, so no list of endpoints is written twice:
 * `docs/endpoints.md` and the SDK's route map `sdk/client/routes.ts` (the SDK does not import
 * the server at run time, so it gets its own copy, as data); and the policy reference
 * `docs/server/policy_reference.md`, from the policy schema (`scripts/policy_reference.ts`).
 *
 * Run `deno run -A scripts/generate_endpoint_files.ts` after changing `server/endpoints.ts` or
 * the policy schema. With `--check` it writes nothing and exits 1 when a file on disk
 * differs from what it would write; `deno task check` runs it that way.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ENDPOINTS, GROUPS, OPT_IN_GROUPS } from "../server/endpoints.ts";
import { groupSwitchName } from "../server/policy/compile.ts";
import { renderPolicyReference } from "./policy_reference.ts";

/** The repository's root directory. */
const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));

const SELF = "scripts/generate_endpoint_files.ts";

/** The generated Markdown. */
export function renderEndpointDocs(): string {
  const lines = [
    "# Endpoints",
    "",
    `Generated from \`server/endpoints.ts\` by \`${SELF}\`; do not edit by hand.`,
    "",
    `${ENDPOINTS.length} endpoints. Every one passes the same pipeline; \`GET /health\` alone skips`,
    "authentication. Opt-in groups (" + OPT_IN_GROUPS.join(", ") + ") are off unless the policy,",
    "the preset `open` or their environment switch turns them on.",
    "",
  ];
  for (const [group, ids] of GROUPS) {
    const optIn = OPT_IN_GROUPS.includes(group) ? ", opt-in" : "";
    lines.push(`## ${group} (${ids.length}${optIn}; switch \`${groupSwitchName(group)}\`)`, "");
    lines.push("| id | method | path | port | scopes | summary |", "|---|---|---|---|---|---|");
    for (const e of ENDPOINTS.filter((x) => x.group === group)) {
      const scopes = e.scopes.length ? e.scopes.map((s) => `\`${s}\``).join(" ") : "none";
      const port = e.port === "pty" ? "PTY (9001)" : "HTTP (9000)";
      lines.push(
        `| \`${e.id}\` | ${e.method} | \`${e.path}\` | ${port} | ${scopes} | ${e.summary} |`,
      );
    }
    lines.push("");
  }
  return lines.join("\n");
}

/** One entry of the route map, broken as `deno fmt` breaks a line over 100 columns. */
function routeEntry(id: string, route: string): string {
  const line = `  ${id}: ${JSON.stringify(route)},`;
  return line.length <= 100 ? line : `  ${id}:\n    ${JSON.stringify(route)},`;
}

/** The generated `sdk/client/routes.ts`. */
export function renderSdkRoutes(): string {
  return [
    "/**",
    " * The client's copy of the server's routes: endpoint id → `\"METHOD /path\"`. The SDK does",
    " * not import the server at run time (a browser or edge bundle of the client must not pull in",
    " * Hono, zod and the policy engine), so the routes are written here as data, generated from",
    ` * the server's endpoint table by \`${SELF}\`; do not edit by hand.`,
    " *",
    " * @module",
    " */",
    "",
    "/**",
    ' * Endpoint id → `"METHOD /path"` with `:param` segments.',
    " *",
    " * @example",
    " * ```ts",
    ' * import assert from "node:assert/strict";',
    ' * import { ROUTES } from "./routes.ts";',
    ' * assert.equal(ROUTES.files_download, "GET /files");',
    " * ```",
    " */",
    "export const ROUTES: Readonly<Record<string, string>> = {",
    ...ENDPOINTS.map((e) => routeEntry(e.id, `${e.method} ${e.path}`)),
    "};",
    "",
  ].join("\n");
}

/** Every generated file: its path from the repository's root and the text it must hold. */
export function generatedFiles(): { path: string; text: string }[] {
  return [
    { path: "docs/endpoints.md", text: renderEndpointDocs() },
    { path: "sdk/client/routes.ts", text: renderSdkRoutes() },
    { path: "docs/server/policy_reference.md", text: renderPolicyReference() },
  ];
}

/** The generated files (paths from `root`) whose text on disk is not what they must hold. */
export async function staleFiles(root: string = REPO_ROOT): Promise<string[]> {
  const stale: string[] = [];
  for (const { path, text } of generatedFiles()) {
    const onDisk = await Deno.readTextFile(join(root, path)).catch(() => null);
    if (onDisk !== text) stale.push(path);
  }
  return stale;
}

if (import.meta.main) {
  const stale = await staleFiles();
  if (Deno.args.includes("--check")) {
    if (stale.length > 0) {
      console.error(`out of date: ${stale.join(", ")}\nrun: deno run -A ${SELF}`);
      Deno.exit(1);
    }
  } else {
    const files = generatedFiles().filter((f) => stale.includes(f.path));
    for (const { path, text } of files) {
      await Deno.writeTextFile(join(REPO_ROOT, path), text);
      console.log(`wrote ${path}`);
    }
  }
}
