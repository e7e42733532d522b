/**
 * `docs/endpoints.md`, generated from the endpoint table so the list is never written twice.
 * Run `deno run -A scripts/endpoint_docs.ts` after changing `server/endpoints.ts`; a test fails
 * while the file is out of date.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { ENDPOINTS, GROUPS, OPT_IN_GROUPS } from "../server/endpoints.ts";
import { groupSwitchName } from "../server/policy/compile.ts";

/** Where the generated file goes. */
export const ENDPOINT_DOCS = fileURLToPath(new URL("../docs/endpoints.md", import.meta.url));

/** The generated Markdown. */
export function renderEndpointDocs(): string {
  const lines = [
    "# Endpoints",
    "",
    "Generated from `server/endpoints.ts` by `scripts/endpoint_docs.ts`; do not edit by hand.",
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

if (import.meta.main) {
  await Deno.writeTextFile(ENDPOINT_DOCS, renderEndpointDocs());
  console.log(`wrote ${ENDPOINT_DOCS}`);
}
