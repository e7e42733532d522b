import assert from "node:assert/strict";
import { type EngineError, manifestEntry, parseManifest } from "../../engine/mod.ts";

const entry = `{
  // comments and trailing commas are fine
  "engines": {
    "a": { "command": ["deno", "run", "a.ts"], "cwd": "sub", "protocol": 1, "answers": ["holds"], },
  },
}`;

Deno.test("a JSONC manifest resolves cwd against its directory and deno to this Deno", () => {
  const manifest = parseManifest(entry, "/srv/engines");
  const a = manifestEntry(manifest, "a");
  assert.equal(a.cwd, "/srv/engines/sub");
  assert.equal(a.command[0], Deno.execPath());
  assert.deepEqual(a.command.slice(1), ["run", "a.ts"]);
});

Deno.test("an unknown engine name lists the names there are", () => {
  assert.throws(
    () => manifestEntry(parseManifest(entry, "/"), "b"),
    (e: EngineError) => e.code === "manifest" && /it has: a/.test(e.message),
  );
});

Deno.test("a manifest that declares rdf or graphs:2 is refused", () => {
  for (const form of ["rdf", "graphs:2"]) {
    const text =
      `{"engines":{"a":{"command":["x"],"protocol":1,"answers":["holds"],"model":["${form}"]}}}`;
    assert.throws(
      () => parseManifest(text, "/"),
      (e: EngineError) =>
        e.code === "manifest" && /serves only sources and graphs:1/.test(e.message),
    );
  }
});

Deno.test("manifest errors name the path and the position", () => {
  assert.throws(
    () => parseManifest(`{"engines":{"a":{"command":[],"protocol":0,"answers":["holds"]}}}`, "/"),
    (e: EngineError) =>
      /engines\.a\.command/.test(e.message) && /engines\.a\.protocol/.test(e.message),
  );
  assert.throws(
    () => parseManifest(`{\n  "engines": {,\n}`, "/"),
    (e: EngineError) => /line 2, column 15/.test(e.message),
  );
});

Deno.test("an entry may name the engine and the versions it accepts; a bad range is refused", () => {
  const text = (extra: string) =>
    `{"engines":{"a":{"command":["x"],"protocol":1,"answers":["holds"]${extra}}}}`;
  const a = manifestEntry(parseManifest(text(`,"name":"explorer","version":"^1.2.0"`), "/"), "a");
  assert.equal(a.name, "a");
  assert.equal(a.describedName, "explorer");
  assert.equal(a.version, "^1.2.0");
  assert.throws(
    () => parseManifest(text(`,"version":"newest"`), "/"),
    (e: EngineError) => /engines\.a\.version: expected a semver version or range/.test(e.message),
  );
});
