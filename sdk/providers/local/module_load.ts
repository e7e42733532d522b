/**
 * Loads the modules named on its command line and exits: run on the host by `module_cache.ts`
 * with the server's runtime flags, so that Deno writes their V8 code cache, which a sandbox
 * (whose `DENO_DIR` is read-only) reads but cannot write. The modules are imported, not run: the
 * server's entry point serves only as the main module, and the relay does nothing without its
 * variables.
 *
 * ```sh
 * deno run -A <server runtime flags> module_load.ts /pkg/server/main.ts /pkg/server/serve.ts …
 * ```
 *
 * @module
 */

import { pathToFileURL } from "node:url";

if (import.meta.main) {
  for (const module of Deno.args) {
    await import(module.includes("://") ? module : pathToFileURL(module).href);
  }
  Deno.exit(0);
}
