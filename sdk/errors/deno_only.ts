/**
 * The one error for what needs Deno when the SDK runs elsewhere. The client parts (`ServerClient`,
 * its capabilities, the errors and the models) talk only HTTP and WebSocket and run under Node 20+
 * too; what starts processes or touches local files (the local provider, `uploadFile`,
 * `downloadFile`) is Deno's, and says so instead of failing with "Deno is not defined".
 *
 * @module
 */

import { ProviderFeatureNotSupportedError } from "./classes.ts";

/**
 * Throws unless this runs under Deno, naming `what` needs it and what works without it.
 *
 * @example
 * ```ts
 * import { requireDeno } from "./deno_only.ts";
 * requireDeno("the local provider"); // under Deno: nothing happens
 * ```
 */
export function requireDeno(what: string): void {
  if (typeof (globalThis as { Deno?: unknown }).Deno !== "undefined") return;
  throw new ProviderFeatureNotSupportedError(
    `${what} needs Deno; under this runtime only the client parts work (ServerClient, its ` +
      "capabilities, the errors and the models)",
    {
      suggestion: "Run this under Deno (npx -y deno@2.9.6 run -A …), or connect a ServerClient " +
        "to a server started elsewhere.",
    },
  );
}
