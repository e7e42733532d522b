/**
 * Request bodies of environments, their files and templates (`/v1/agents/environments…`).
 *
 * @module
 */

import { z } from "zod";

/** A file destination: absolute, inside `/workspace`, no `.`/`..`/empty parts, not reserved. */
export const workspacePath = z.string().max(4096).refine((path) => {
  const parts = path.split("/");
  const root = parts[2] ?? "";
  return path.startsWith("/workspace/") && !path.includes("\\") && !path.includes("\0") &&
    !parts.slice(1).some((p) => p === "" || p === "." || p === "..") &&
    root !== ".codex" && root !== ".managed-agents" && !root.startsWith(".managed-agents-") &&
    path !== "/workspace/outputs";
}, { message: "must be a non-reserved absolute file path inside /workspace" });

/** A file to put in the workspace: inline base64 data, or an uploaded file's id. */
export const environmentFileSchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("inline"),
    path: workspacePath,
    data: z.base64({ message: "must be base64" }),
  }),
  z.strictObject({ type: z.literal("file_id"), path: workspacePath, file_id: z.string().min(1) }),
]);

const capabilitySource = z.strictObject({
  type: z.literal("base64"),
  media_type: z.literal("application/zip"),
  data: z.base64(),
});

/** The settings an environment and a template share. */
export const environmentSettings = {
  capability_directories: z.array(z.string()).nullish(),
  desktop: z.strictObject({ enabled: z.boolean() }).nullish(),
  env: z.record(z.string(), z.string()).nullish(),
  files: z.array(environmentFileSchema).max(1000).nullish(),
  network: z.strictObject({
    access: z.enum(["enabled", "disabled", "restricted"]),
    allowed_domains: z.array(z.string().min(1)).max(100).nullish(),
    blocked_domains: z.array(z.string().min(1)).nullish(),
  }).nullish(),
  packages: z.strictObject({
    npm: z.array(z.string().min(1)).nullish(),
    python: z.array(z.string().min(1)).nullish(),
    system: z.array(z.string().min(1)).nullish(),
  }).nullish(),
  plugins: z.array(z.strictObject({
    type: z.literal("inline"),
    name: z.string().min(1),
    description: z.string(),
    source: capabilitySource,
  })).nullish(),
  setup_commands: z.array(z.strictObject({ command: z.string().min(1), cwd: z.string().nullish() }))
    .max(100).nullish(),
  skills: z.array(z.discriminatedUnion("type", [
    z.strictObject({
      type: z.literal("skill_reference"),
      skill_id: z.string(),
      version: z.string().nullish(),
    }),
    z.strictObject({
      type: z.literal("inline"),
      name: z.string().min(1),
      description: z.string(),
      source: capabilitySource,
    }),
  ])).nullish(),
};

/** `POST /v1/agents/environments`. */
export const environmentCreateSchema = z.strictObject({
  environment: z.strictObject({
    type: z.literal("openai_hosted"),
    environment_template_id: z.string().min(1).optional(),
    ...environmentSettings,
  }),
  vault_ids: z.array(z.string().min(1)).max(10).nullish(),
});

/** `POST /v1/agents/environments/templates` and its update (fields replace). */
export const templateSchema = z.strictObject({
  name: z.string().max(256).nullish(),
  ...environmentSettings,
});

/** Settings as validated. */
export type EnvironmentSettings = z.output<typeof templateSchema>;
/** One file as validated. */
export type EnvironmentFileParam = z.output<typeof environmentFileSchema>;
