/**
 * Wire shapes to SDK shapes: the server speaks snake_case JSON and NDJSON streams; the SDK
 * hands out camelCase objects and async iterables.
 *
 * @module
 */

/** `snake_case` → `camelCase`. */
export function camelKey(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/**
 * A JSON value with every object key camelCased, deeply, except inside the keys named in
 * `keep` (whose values are data keyed by names, such as an environment map).
 */
export function camelize<T>(value: unknown, keep: ReadonlySet<string> = new Set()): T {
  if (Array.isArray(value)) return value.map((v) => camelize(v, keep)) as T;
  if (typeof value !== "object" || value === null) return value as T;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[camelKey(k)] = keep.has(k) ? v : camelize(v, keep);
  }
  return out as T;
}

/** An ISO 8601 string (or null) as a Date (or null). */
export function toDate(value: unknown): Date | null {
  if (typeof value !== "string" && typeof value !== "number") return null;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? null : d;
}

/** The longest line a stream may send: a stream that sends more without a newline is broken. */
const MAX_LINE = 16 * 1024 * 1024;

/**
 * The text lines of a body (without their `\n` / `\r\n`). Leaving the loop early (break,
 * return, throw) cancels the body, so the server sees the client go.
 */
export async function* textLines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let finished = false;
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let nl: number;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl).replace(/\r$/, "");
        buffer = buffer.slice(nl + 1);
        yield line;
      }
      if (buffer.length > MAX_LINE) throw new Error("A streamed line is over 16 MiB");
    }
    finished = true;
    if (buffer !== "") yield buffer;
  } finally {
    if (!finished) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

/** The JSON objects of an NDJSON body, one per non-blank line. */
export async function* ndjson(body: ReadableStream<Uint8Array>): AsyncGenerator<unknown> {
  for await (const line of textLines(body)) {
    if (line.trim() !== "") yield JSON.parse(line);
  }
}
