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
}

/** Write all of `bytes`. */
export async function writeAll(w: Duplex, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await w.write(bytes.subarray(off));
}

async function copy(from: Duplex, to: Duplex): Promise<void> {
  const buf = new Uint8Array(CHUNK);
  while (true) {
    const n = await from.read(buf);
    if (n === null) return;
    await writeAll(to, buf.subarray(0, n));
  }
}

function closeQuietly(c: Duplex): void {
  try {
    c.close();
  } catch { /* already closed */ }
}

/**
 * Copy `client` → `upstream` and `upstream` → `client` until the upstream side ends (or
 * either side fails), then close both. The end of the client's side alone does not end the
 * splice unless `closeOnClientEnd` is set: an HTTP client may stop sending and still wait for
 * the answer, while a WebSocket client that goes away should take the upstream side with it.
 */
export async function splice(
  client: Duplex,
  upstream: Duplex,
  closeOnClientEnd: boolean,
): Promise<void> {
  const done = Promise.withResolvers<void>();
  const finish = () => {
    closeQuietly(client);
    closeQuietly(upstream);
    done.resolve();
  };
  copy(client, upstream).then(() => closeOnClientEnd && finish(), finish);
  copy(upstream, client).then(finish, finish);
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
