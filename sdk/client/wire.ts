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

/** The longest NDJSON line accepted: a stream that sends more without a newline is broken. */
const MAX_LINE = 16 * 1024 * 1024;

/**
 * The JSON objects of an NDJSON body, one per line. Leaving the loop early (break, return,
 * throw) cancels the body, so the server sees the client go.
 */
export async function* ndjson(body: ReadableStream<Uint8Array>): AsyncGenerator<unknown> {
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
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (line !== "") yield JSON.parse(line);
      }
      if (buffer.length > MAX_LINE) throw new Error("NDJSON line over 16 MiB");
    }
    finished = true;
    if (buffer.trim() !== "") yield JSON.parse(buffer);
  } finally {
    if (!finished) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
