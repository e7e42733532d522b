/**
 * The registry of providers: a name to a factory. `local` (the default) and `docker` are built in;
 * `SANDBAR_PROVIDER` names another default for the whole process.
 *
 * @module
 */

import { requireDeno } from "../errors/deno_only.ts";
import { ValidationError } from "../errors/mod.ts";
import { DockerProvider } from "./docker/index.ts";
import { LocalProvider } from "./local/index.ts";
import type { ProviderCredentials, SandboxProvider } from "./types.ts";

/** Makes a provider from the credentials a call carries. */
export type ProviderFactory = (credentials: ProviderCredentials) => SandboxProvider;

/**
 * The local provider runs on this machine and has no account: a credential given to it is a
 * mistake (meant for another provider, or copied from E2B's examples), refused rather than
 * silently dropped.
 */
function refuseCredentials(credentials: ProviderCredentials): void {
  const given = Object.entries(credentials).filter(([, v]) => v !== undefined).map(([k]) => k);
  if (given.length > 0) {
    throw new ValidationError(
      `The local provider takes no credentials; ${given.join(", ")} mean${
        given.length === 1 ? "s" : ""
      } nothing to it`,
      {
        suggestion: `Leave out ${given.join(", ")}, or name the provider ${
          given.length === 1 ? "it is" : "they are"
        } for with \`provider\` (registered: ${providerNames().join(", ")}).`,
      },
    );
  }
}

const FACTORIES = new Map<string, ProviderFactory>([
  ["local", () => {
    requireDeno("the local provider (it runs sandboxes with bubblewrap and Deno)");
    return new LocalProvider();
  }],
  ["docker", () => new DockerProvider()],
]);

/**
 * Register a provider under `name` (replacing one of the same name).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LocalProvider, providerNames, registerProvider, Sandbox } from "@sandbar/sandbar";
 *
 * const home = await Deno.makeTempDir();
 * registerProvider("scratch", () => new LocalProvider({ home }));
 * assert.ok(providerNames().includes("scratch"));
 * {
 *   await using sandbox = await Sandbox.create({ provider: "scratch" });
 *   assert.equal(sandbox.provider, "local");
 * }
 * await Deno.remove(home, { recursive: true });
 * ```
 */
export function registerProvider(name: string, factory: ProviderFactory): void {
  if (!/^[a-z][a-z0-9_-]*$/.test(name)) {
    throw new ValidationError(`Provider name "${name}" must be lower-case letters, digits, _ -`);
  }
  FACTORIES.set(name, factory);
}

/** The names of the registered providers. */
export function providerNames(): string[] {
  return [...FACTORIES.keys()].sort();
}

/**
 * The provider a call uses: the one given, else the one named by `SANDBAR_PROVIDER`, else
 * `local`.
 */
export function resolveProvider(
  provider: string | SandboxProvider | undefined,
  credentials: ProviderCredentials = {},
): SandboxProvider {
  if (provider !== undefined && typeof provider !== "string") {
    if (provider.name === "local") refuseCredentials(credentials);
    return provider;
  }
  const name = provider ?? Deno.env.get("SANDBAR_PROVIDER") ?? "local";
  const factory = FACTORIES.get(name);
  if (!factory) {
    throw new ValidationError(`No provider named "${name}"`, {
      suggestion: `Registered: ${providerNames().join(", ")}. Add one with registerProvider().`,
    });
  }
  const made = factory(credentials);
  if (made.name === "local") refuseCredentials(credentials);
  return made;
}
