/**
 * Copying bytes both ways between two connections, for the port gateway and the in-sandbox
 * relay. Bytes are copied as they are (an upload of any size streams through without being
 * held), and nothing is left open: when the upstream side ends, both are closed.
 *
 * @module
 */

const CHUNK = 256 * 1024;

/** A byte stream both ends of a splice can be: a TCP or Unix connection. */
export interface Duplex {
  /** Read into `p`; null at end of stream. */
  read(p: Uint8Array): Promise<number | null>;
  /** Write some of `p`; the number written. */
  write(p: Uint8Array): Promise<number>;
  /** Close both directions. */
  close(): void;
  /** End the writing direction only (TCP and Unix connections have it). */
  closeWrite?(): Promise<void>;
}

/**
 * How long a closed splice keeps reading what its client still sends, after its last byte and
 * its end went out: closing a socket with bytes unread makes the kernel answer with a reset,
 * which can destroy the answer in the client's buffer before the client reads it.
 */
const LINGER_MS = 2000;

/** Write all of `bytes`. */
export async function writeAll(w: Duplex, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await w.write(bytes.subarray(off));
}

/** How a copy ended: its source ended, reading its source failed, or writing failed. */
type CopyEnd = "ended" | "read failed" | "write failed";

async function copy(from: Duplex, to: Duplex): Promise<CopyEnd> {
  const buf = new Uint8Array(CHUNK);
  while (true) {
    let n: number | null;
    try {
      n = await from.read(buf);
    } catch {
      return "read failed";
    }
    if (n === null) return "ended";
    try {
      await writeAll(to, buf.subarray(0, n));
    } catch {
      // The other side takes no more: what still comes is read and dropped until it ends.
      while (await from.read(buf).catch(() => null) !== null) { /* drop */ }
      return "write failed";
    }
  }
}

function closeQuietly(c: Duplex): void {
  try {
    c.close();
  } catch { /* already closed */ }
}

/**
 * Copy `client` → `upstream` and `upstream` → `client` until the upstream side ends (or
 * fails, or the client fails), then close both. The end of the client's side alone does not end
 * the splice unless `closeOnClientEnd` is set: an HTTP client may stop sending and still wait for
 * the answer, while a WebSocket client that goes away should take the upstream side with it.
 * Nor does `upstream` refusing more of the client's bytes: a server answers and closes with a
 * request still coming (one that was too large, or a second one pipelined behind a
 * `Connection: close`), and its answer must still reach the client.
 */
export async function splice(
  client: Duplex,
  upstream: Duplex,
  closeOnClientEnd: boolean,
): Promise<void> {
  const done = Promise.withResolvers<void>();
  let clientEnded = false;
  let finishing = false;
  const finish = async (linger: boolean) => {
    if (finishing) return;
    finishing = true;
    closeQuietly(upstream);
    if (linger && !clientEnded && client.closeWrite) {
      // The answer and its end go out first; the client's own end (or the timer) closes.
      await client.closeWrite().catch(() => {});
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        fromClient,
        new Promise((r) => timer = setTimeout(r, LINGER_MS)),
      ]);
      clearTimeout(timer);
    }
    closeQuietly(client);
    done.resolve();
  };
  const fromClient = copy(client, upstream).then((end) => {
    clientEnded = true;
    if (end === "read failed" || (end === "ended" && closeOnClientEnd)) finish(false);
  });
  copy(upstream, client).then((end) => finish(end === "ended"));
  await done.promise;
}

/**
 * Read from `conn` until `delimiter` is seen or `max` bytes were read. Returns the bytes up to
 * the delimiter (excluded) and whatever came after it; null when the stream ended or grew past
 * `max` first.
 */
export async function readUntil(
  conn: Duplex,
  delimiter: Uint8Array,
  max: number,
): Promise<{ head: Uint8Array; rest: Uint8Array } | null> {
  let data = new Uint8Array(0);
  const buf = new Uint8Array(Math.min(max, 16 * 1024));
  while (data.length <= max) {
    const n = await conn.read(buf);
    if (n === null) return null;
    const next = new Uint8Array(data.length + n);
    next.set(data);
    next.set(buf.subarray(0, n), data.length);
    const from = Math.max(0, data.length - delimiter.length + 1);
    data = next;
    const at = indexOf(data, delimiter, from);
    if (at >= 0) {
      return { head: data.subarray(0, at), rest: data.subarray(at + delimiter.length) };
    }
  }
  return null;
}

function indexOf(hay: Uint8Array, needle: Uint8Array, from: number): number {
  outer: for (let i = from; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}
