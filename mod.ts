/**
 * sandbar: run untrusted and AI-agent work in sandboxes.
 *
 * The root entry is the client library (the same as `@sandbar/sandbar/sdk`). The in-sandbox
 * server is `@sandbar/sandbar/server`; the External Engine Protocol host is
 * `@sandbar/sandbar/engine`.
 *
 * @example A local sandbox
 * ```ts
 * import assert from "node:assert/strict";
 * import { Sandbox } from "@sandbar/sandbar";
 * await using sandbox = await Sandbox.create();
 * const result = await sandbox.commands.run("echo hello");
 * assert.equal(result.stdout, "hello\n");
 * ```
 *
 * @module
 */

export * from "./sdk/mod.ts";
