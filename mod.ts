/**
 * sandbar: run untrusted and AI-agent work in sandboxes.
 *
 * The root entry is the client library (the same as `@sandbar/sandbar/sdk`). The in-sandbox
 * server is `@sandbar/sandbar/server`; the External Engine Protocol host is
 * `@sandbar/sandbar/engine`.
 *
 * @example
 * ```ts ignore
 * import { Sandbox } from "@sandbar/sandbar";
 * await using sandbox = await Sandbox.create();
 * const result = await sandbox.commands.run("echo hello");
 * console.log(result.stdout);
 * ```
 *
 * @module
 */

export * from "./sdk/mod.ts";
