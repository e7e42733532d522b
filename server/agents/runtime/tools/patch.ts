/**
 * The Codex patch format, parsed and applied to text. A patch is
 *
 * ```text
 * *** Begin Patch
 * *** Add File: path        then the file's lines, each prefixed with "+"
 * *** Delete File: path
 * *** Update File: path
 * *** Move to: new/path     (optional, right after Update File)
 * @@ optional line to find first
 *  context line  / -removed line / +added line, in chunks each opened by "@@"
 * *** End of File           (optional: the chunk ends at the end of the file)
 * *** End Patch
 * ```
 *
 * Applying a chunk finds its old lines (context and removed) after the previous chunk, exactly
 * first, then ignoring trailing and then surrounding whitespace, as models do not always copy
 * spacing faithfully.
 *
 * @module
 */

import { ToolError } from "./tool.ts";

/** One chunk of an update. */
export interface PatchChunk {
  /** A line to find before the chunk (`@@ line`), if given. */
  anchor: string | null;
  /** Lines the chunk expects. */
  oldLines: string[];
  /** Lines that replace them. */
  newLines: string[];
  /** Whether the chunk must end at the end of the file. */
  atEnd: boolean;
}

/** One file operation of a patch. */
export type PatchOperation =
  | { type: "add"; path: string; content: string }
  | { type: "delete"; path: string }
  | { type: "update"; path: string; moveTo: string | null; chunks: PatchChunk[] };

/** A patch that cannot be read or applied, with the reason (the model reads `invalid_patch`). */
export class PatchError extends ToolError {
  /** Make one. */
  constructor(message: string) {
    super("invalid_patch", message);
    this.name = "PatchError";
  }
}

const BEGIN = "*** Begin Patch";
const END = "*** End Patch";

/**
 * Parse a patch.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parsePatch } from "./patch.ts";
 * const ops = parsePatch("*** Begin Patch\n*** Add File: a.txt\n+hi\n*** Delete File: b.txt\n*** End Patch");
 * assert.deepEqual(ops, [{ type: "add", path: "a.txt", content: "hi\n" }, { type: "delete", path: "b.txt" }]);
 * ```
 */
export function parsePatch(text: string): PatchOperation[] {
  const lines = text.replace(/\r\n/g, "\n").trim().split("\n");
  // Some models wrap the patch in a heredoc (`apply_patch <<'EOF' … EOF`); take what is inside.
  const begin = lines.findIndex((l) => l.trim() === BEGIN);
  const end = lines.findLastIndex((l) => l.trim() === END);
  if (begin === -1) throw new PatchError(`the patch must start with '${BEGIN}'`);
  if (end <= begin) throw new PatchError(`the patch must end with '${END}'`);
  const body = lines.slice(begin + 1, end);
  const ops: PatchOperation[] = [];
  let i = 0;
  const header = (line: string, name: string) =>
    line.startsWith(`*** ${name}: `) ? line.slice(name.length + 6).trim() : null;
  while (i < body.length) {
    const line = body[i];
    let path: string | null;
    if ((path = header(line, "Add File")) !== null) {
      i++;
      const added: string[] = [];
      while (i < body.length && !body[i].startsWith("*** ")) {
        if (!body[i].startsWith("+")) {
          throw new PatchError(
            `line ${begin + i + 2}: every line of an added file starts with '+'`,
          );
        }
        added.push(body[i].slice(1));
        i++;
      }
      ops.push({ type: "add", path, content: added.length ? added.join("\n") + "\n" : "" });
    } else if ((path = header(line, "Delete File")) !== null) {
      ops.push({ type: "delete", path });
      i++;
    } else if ((path = header(line, "Update File")) !== null) {
      i++;
      let moveTo: string | null = null;
      if (i < body.length && (moveTo = header(body[i], "Move to")) !== null) i++;
      const chunks: PatchChunk[] = [];
      let chunk: PatchChunk | null = null;
      while (i < body.length && !/^\*\*\* (Add|Delete|Update) File: /.test(body[i])) {
        const l = body[i];
        if (l.startsWith("@@")) {
          chunk = { anchor: l.slice(2).trim() || null, oldLines: [], newLines: [], atEnd: false };
          chunks.push(chunk);
        } else if (l.trim() === "*** End of File") {
          if (chunk) chunk.atEnd = true;
        } else {
          if (!chunk) {
            // A first chunk without "@@" is accepted, as Codex does.
            chunk = { anchor: null, oldLines: [], newLines: [], atEnd: false };
            chunks.push(chunk);
          }
          const mark = l[0] ?? " ";
          const rest = l.slice(1);
          if (mark === " " || l === "") {
            chunk.oldLines.push(rest);
            chunk.newLines.push(rest);
          } else if (mark === "-") chunk.oldLines.push(rest);
          else if (mark === "+") chunk.newLines.push(rest);
          else {
            throw new PatchError(
              `line ${begin + i + 2}: a chunk line starts with ' ', '-' or '+', got '${l}'`,
            );
          }
        }
        i++;
      }
      if (chunks.length === 0 && moveTo === null) {
        throw new PatchError(`Update File ${path}: no change`);
      }
      ops.push({ type: "update", path, moveTo, chunks });
    } else if (line.trim() === "") {
      i++;
    } else {
      throw new PatchError(
        `line ${
          begin + i + 2
        }: expected '*** Add File:', '*** Delete File:' or '*** Update File:', got '${line}'`,
      );
    }
  }
  if (ops.length === 0) throw new PatchError("the patch changes no file");
  return ops;
}

const NORMALISERS: ((s: string) => string)[] = [(s) => s, (s) => s.trimEnd(), (s) => s.trim()];

function find(lines: string[], wanted: string[], from: number, atEnd: boolean): number {
  if (wanted.length === 0) return atEnd ? lines.length : from;
  for (const norm of NORMALISERS) {
    const w = wanted.map(norm);
    const last = lines.length - w.length;
    const starts = atEnd
      ? [last]
      : Array.from({ length: Math.max(0, last - from + 1) }, (_, k) => from + k);
    for (const s of starts) {
      if (s < from) continue;
      let ok = true;
      for (let j = 0; j < w.length && ok; j++) ok = norm(lines[s + j]) === w[j];
      if (ok) return s;
    }
  }
  return -1;
}

/**
 * Apply an update's chunks to a file's text.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { applyChunks, parsePatch } from "./patch.ts";
 * const [op] = parsePatch("*** Begin Patch\n*** Update File: a\n@@\n one\n-two\n+2\n*** End Patch");
 * assert.equal(op.type === "update" && applyChunks("one\ntwo\nthree\n", op.chunks, "a"), "one\n2\nthree\n");
 * ```
 */
export function applyChunks(text: string, chunks: PatchChunk[], path: string): string {
  const endsWithNewline = text.endsWith("\n");
  const lines = text === "" ? [] : (endsWithNewline ? text.slice(0, -1) : text).split("\n");
  let at = 0;
  for (const [n, chunk] of chunks.entries()) {
    if (chunk.anchor !== null) {
      const found = find(lines, [chunk.anchor], at, false);
      if (found === -1) {
        throw new PatchError(`${path}: chunk ${n + 1}: the line '${chunk.anchor}' was not found`);
      }
      at = found + 1;
    }
    const start = find(lines, chunk.oldLines, at, chunk.atEnd);
    if (start === -1) {
      throw new PatchError(
        `${path}: chunk ${n + 1}: these lines were not found:\n${chunk.oldLines.join("\n")}`,
      );
    }
    lines.splice(start, chunk.oldLines.length, ...chunk.newLines);
    at = start + chunk.newLines.length;
  }
  return lines.length === 0 ? "" : lines.join("\n") + "\n";
}
