import { fileURLToPath } from "node:url";
import type { EngineEntry } from "../../engine/mod.ts";

const fixtures = fileURLToPath(new URL("./fixtures/", import.meta.url));

/** A manifest entry for the rogue fixture in `mode`, matching what that fixture describes. */
export function rogue(mode: string, overrides: Partial<EngineEntry> = {}): EngineEntry {
  return {
    name: `rogue-${mode}`,
    command: [Deno.execPath(), "run", "--quiet", "--no-prompt", "rogue.ts", mode],
    cwd: fixtures,
    env: {},
    protocol: 1,
    answers: ["holds"],
    bounds: ["depth"],
    witness: "schedule",
    model: ["graphs:1"],
    authority: "bounded",
    concurrent: mode === "concurrent",
    ...overrides,
  };
}

export const question = {
  kind: "holds" as const,
  subject: "deposit",
  schedule: "all",
  free: ["schedule" as const],
  condition: { name: "no lost update" },
};

export const model = { graphs: { version: 1, subject: "deposit" } };

/** Whether a process with this pid still exists (zombies included). */
export function alive(pid: number): boolean {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}

/** Fast escalation for tests: every grace period is 200 ms. */
export const fast = { graceMs: 200, runIdleMs: 5000, describeTimeoutMs: 5000 };
