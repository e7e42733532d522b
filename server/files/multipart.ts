/**
 * A streaming `multipart/form-data` reader (RFC 7578): parts come one at a time, each with its
 * body as a stream read straight from the request, so a multi-gigabyte upload never sits in
 * memory (`Request.formData()` would buffer all of it). Only the part headers are buffered, up
 * to 16 KiB.
 *
 * @module
 */

import { concatBytes } from "../../shared/bytes.ts";
import { ApiError } from "../errors.ts";

/** One part of a multipart body. */
export interface MultipartPart {
  /** The form field name. */
  name: string;
  /** The file name, for a file part. */
  filename: string | null;
  /** The part's own `Content-Type`, if given. */
  contentType: string | null;
  /** The part's bytes. Read it (or not) before asking for the next part. */
  body: ReadableStream<Uint8Array>;
}

const MAX_HEADER_BYTES = 16 * 1024;
const CRLF = new Uint8Array([13, 10]);
const HEADER_END = new Uint8Array([13, 10, 13, 10]);

function malformed(why: string): ApiError {
  return new ApiError("invalid_request", `Malformed multipart body: ${why}`);
}

/**
 * The boundary of a `multipart/form-data` content type, or null when it is not one.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { multipartBoundary } from "./multipart.ts";
 * assert.equal(multipartBoundary('multipart/form-data; boundary="abc"'), "abc");
 * assert.equal(multipartBoundary("application/json"), null);
 * ```
 */
export function multipartBoundary(contentType: string | null): string | null {
  if (!contentType || !/^multipart\/form-data\s*(;|$)/i.test(contentType)) return null;
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^;\s]{1,70}))/i.exec(contentType);
  if (!m) throw malformed("no boundary in Content-Type");
  return m[1] ?? m[2];
}

function indexOf(hay: Uint8Array, needle: Uint8Array, from = 0): number {
  const first = needle[0];
  const last = hay.length - needle.length;
  for (let i = hay.indexOf(first, from); i !== -1 && i <= last; i = hay.indexOf(first, i + 1)) {
    let j = 1;
    while (j < needle.length && hay[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

/** A parameter of a `Content-Disposition` header, with RFC 5987 `name*=` taking precedence. */
function dispositionParam(header: string, key: string): string | null {
  const star = new RegExp(`;\\s*${key}\\*=(?:UTF-8|utf-8)''([^;]*)`).exec(header);
  if (star) {
    try {
      return decodeURIComponent(star[1].trim());
    } catch {
      throw malformed(`bad ${key}*`);
    }
  }
  const m = new RegExp(`;\\s*${key}=(?:"((?:[^"\\\\]|\\\\.)*)"|([^;]*))`).exec(header);
  if (!m) return null;
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : m[2].trim();
}

/**
 * Read a multipart body part by part.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { multipartBoundary, readMultipart } from "./multipart.ts";
 * const form = new FormData();
 * form.append("file", new Blob(["hello"]), "a.txt");
 * const req = new Request("http://localhost/", { method: "POST", body: form });
 * const boundary = multipartBoundary(req.headers.get("content-type"))!;
 * for await (const part of readMultipart(req.body!, boundary)) {
 *   assert.equal(part.filename, "a.txt");
 *   assert.equal(await new Response(part.body).text(), "hello");
 * }
 * ```
 */
export async function* readMultipart(
  body: ReadableStream<Uint8Array>,
  boundary: string,
): AsyncGenerator<MultipartPart> {
  const reader = body.getReader();
  // A body starts with `--boundary`; pretending a CRLF came first makes every delimiter alike.
  const delimiter = new TextEncoder().encode(`\r\n--${boundary}`);
  let buf: Uint8Array = CRLF;
  let ended = false;
  const fill = async (): Promise<boolean> => {
    if (ended) return false;
    const { value, done } = await reader.read();
    if (done) {
      ended = true;
      return false;
    }
    buf = buf.length === 0 ? value : concatBytes([buf, value]);
    return true;
  };
  const need = async (n: number) => {
    while (buf.length < n) if (!(await fill())) throw malformed("the body ended early");
  };
  try {
    // Skip the preamble up to the first delimiter.
    while (true) {
      const at = indexOf(buf, delimiter);
      if (at !== -1) {
        buf = buf.subarray(at + delimiter.length);
        break;
      }
      buf = buf.subarray(Math.max(0, buf.length - delimiter.length + 1));
      if (!(await fill())) throw malformed("no boundary found");
    }
    while (true) {
      await need(2);
      if (buf[0] === 45 && buf[1] === 45) return; // `--`: the closing delimiter.
      // Transport padding (spaces, tabs) may follow a delimiter before its CRLF.
      let lineEnd: number;
      while ((lineEnd = indexOf(buf, CRLF)) === -1) {
        if (buf.length > 256) throw malformed("bad delimiter line");
        await need(buf.length + 1);
      }
      buf = buf.subarray(lineEnd + 2);
      let headerEnd: number;
      // A part without headers starts with the blank line itself.
      if (buf.length >= 2 && buf[0] === 13 && buf[1] === 10) headerEnd = -2;
      else {
        while ((headerEnd = indexOf(buf, HEADER_END)) === -1) {
          if (buf.length > MAX_HEADER_BYTES) throw malformed("part headers are too long");
          await need(buf.length + 1);
        }
      }
      const headerText = headerEnd < 0 ? "" : new TextDecoder().decode(buf.subarray(0, headerEnd));
      buf = buf.subarray(headerEnd + 4);
      const headers = new Map<string, string>();
      for (const line of headerText.split("\r\n")) {
        const colon = line.indexOf(":");
        if (colon > 0) {
          headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
        }
      }
      const disposition = headers.get("content-disposition") ?? "";
      if (!/^form-data\b/i.test(disposition)) throw malformed("a part is not form-data");
      let done = false;
      const partBody = new ReadableStream<Uint8Array>({
        async pull(controller) {
          while (true) {
            const at = indexOf(buf, delimiter);
            if (at !== -1) {
              if (at > 0) controller.enqueue(buf.subarray(0, at));
              buf = buf.subarray(at + delimiter.length);
              done = true;
              controller.close();
              return;
            }
            const safe = buf.length - delimiter.length + 1;
            if (safe > 0) {
              controller.enqueue(buf.subarray(0, safe));
              buf = buf.subarray(safe);
              return;
            }
            if (!(await fill())) {
              throw malformed("the body ended inside a part");
            }
          }
        },
      }, { highWaterMark: 0 });
      yield {
        name: dispositionParam(disposition, "name") ?? "",
        filename: dispositionParam(disposition, "filename"),
        contentType: headers.get("content-type") ?? null,
        body: partBody,
      };
      if (!done) {
        // The caller did not read the whole part: skip the rest of it.
        for await (const _ of partBody) { /* drain */ }
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
