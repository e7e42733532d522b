/**
 * The typed models of the server client, by group.
 *
 * @module
 */

export type * from "./browser.ts";
export type * from "./core.ts";
export type * from "./devtools.ts";
export type * from "./files.ts";
export type * from "./process.ts";
export type * from "./pty.ts";
export type * from "./system.ts";
