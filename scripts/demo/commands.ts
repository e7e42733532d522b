/**
 * Example named commands, as a template author writes them: `--commands scripts/demo/commands.ts`.
 *
 * @module
 */

import type { CommandRegistry } from "../../server/mod.ts";

/** Register the example commands. */
export default function register(commands: CommandRegistry): void {
  commands.register("word_count", {
    description: "Count the words of a text",
    args: { text: { type: "string", required: true, description: "The text to count" } },
  }, ({ text }) => ({ words: text.split(/\s+/).filter(Boolean).length }));
}
