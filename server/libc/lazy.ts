/**
 * libc opened on first use, once per symbol table: for modules that bind a few calls of their own
 * (sockets, inotify) and must work, or answer null, where there is no Linux libc.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { lazyLibc } from "./lazy.ts";
 * const load = lazyLibc({ getpid: { parameters: [], result: "i32" } });
 * const libc = load();
 * if (libc) assert.equal(libc.getpid(), Deno.pid);
 * assert.equal(load(), libc); // opened once
 * ```
 *
 * @module
 */

/** A loader of `symbols` from `libc.so.6`: their bindings, or null off Linux or without libc. */
export function lazyLibc<S extends Deno.ForeignLibraryInterface>(
  symbols: S,
): () => Deno.DynamicLibrary<S>["symbols"] | null {
  let library: Deno.DynamicLibrary<S> | null | undefined;
  return () => {
    if (library === undefined) {
      try {
        library = Deno.build.os === "linux" ? Deno.dlopen("libc.so.6", symbols) : null;
      } catch {
        library = null;
      }
    }
    return library?.symbols ?? null;
  };
}
