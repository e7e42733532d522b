// The command guard's parser on its own: it must answer every input with a verdict (never hang,
// never throw), since it reads hostile strings inside the server.
import assert from "node:assert/strict";
import { decideArgv, decideShellCommand } from "../../server/guards/commands/index.ts";

const RULES = { deny: ["rm"], denyAssign: ["PATH"] };
const ALPHABET = [
  ..."ab rm;&|()<>{}[]$`'\"\\\n#=*?!-~",
  "$(",
  "<<",
  "EOF",
  "case",
  "in",
  "esac",
  "for",
  "do",
  "done",
  "if",
  "fi",
  "[[",
  "]]",
  "((",
  "))",
  "$((",
  "function",
  "bash -c",
  "env",
  "<(",
  ">(",
];

/** A small deterministic generator, so a failure can be replayed. */
function* strings(count: number, seed: number): Generator<string> {
  let x = seed;
  const next = () => (x = (x * 1103515245 + 12345) & 0x7fffffff);
  for (let n = 0; n < count; n++) {
    let s = "";
    const len = next() % 24;
    for (let i = 0; i < len; i++) s += ALPHABET[next() % ALPHABET.length];
    yield s;
  }
}

Deno.test("the command guard gives a verdict for any string", () => {
  for (const s of strings(20000, 7)) {
    const v = decideShellCommand(RULES, s);
    if (!v.allowed) assert.match(v.code, /^command_(invalid|not_allowed)$/, JSON.stringify(s));
  }
});

Deno.test("a string that runs rm is never allowed, whatever surrounds it", () => {
  // A blank line first: a trailing backslash in `s` would join one newline, never two.
  for (const s of strings(5000, 11)) {
    for (const cmd of [`${s}\n\nrm x`, `rm x;${s}`]) {
      assert.equal(decideShellCommand(RULES, cmd).allowed, false, JSON.stringify(cmd));
    }
  }
});

Deno.test("argv: wrappers are looked through, plain arguments are data", () => {
  assert.equal(decideArgv(RULES, ["echo", "rm", "$(rm x)"]).allowed, true);
  assert.equal(decideArgv(RULES, ["timeout", "5", "rm", "x"]).allowed, false);
  assert.equal(decideArgv(RULES, ["sh", "-c", "echo; rm x"]).allowed, false);
  assert.equal(
    decideArgv({ allow: ["git"], deny: [], denyAssign: [] }, ["git", "status"]).allowed,
    true,
  );
  assert.equal(decideArgv({ allow: ["git"], deny: [], denyAssign: [] }, ["./git"]).allowed, false);
});
