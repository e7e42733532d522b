/**
 * A minimal keep-alive HTTP/1.1 client for latency benchmarks: one TCP connection, one request
 * at a time, answers framed by `content-length` only (a chunked answer is an error).
 *
 * Why not `fetch`: Deno's `fetch` spends about 0.1 ms of its own per request on loopback
 * (request and header objects, the connection pool, a body stream), which in a latency bench
 * is charged to the server. This client costs a write and a read, as `wrk` or `curl` would.
 *
 * @module
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** An answer: status and body text. */
export interface Http1Response {
  /** The status code. */
  status: number;
  /** The body, decoded as UTF-8. */
  text: string;
}

/**
 * One keep-alive connection.
 *
 * @example
 * ```ts ignore
 * using client = await Http1Client.connect("http://127.0.0.1:9000", { authorization: "Bearer t" });
 * const { status, text } = await client.request("POST", "/process/shell", '{"cmd":"true"}');
 * ```
 */
export class Http1Client implements Disposable {
  readonly #conn: Deno.TcpConn;
  readonly #head: string;
  readonly #buffer = new Uint8Array(256 * 1024);

  private constructor(conn: Deno.TcpConn, host: string, headers: Record<string, string>) {
    this.#conn = conn;
    this.#head = [`host: ${host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)]
      .join("\r\n");
  }

  /** Connect to `url`'s host and port; `headers` go with every request. */
  static async connect(url: string, headers: Record<string, string> = {}): Promise<Http1Client> {
    const u = new URL(url);
    const conn = await Deno.connect({ hostname: u.hostname, port: Number(u.port || 80) });
    conn.setNoDelay(true);
    return new Http1Client(conn, u.host, headers);
  }

  /** Send one request (a body is sent as JSON) and read its whole answer. */
  async request(method: string, path: string, body?: string): Promise<Http1Response> {
    const payload = body === undefined ? "" : body;
    const bodyHeaders = body === undefined
      ? ""
      : `content-type: application/json\r\ncontent-length: ${encoder.encode(payload).length}\r\n`;
    await this.#writeAll(
      encoder.encode(`${method} ${path} HTTP/1.1\r\n${this.#head}\r\n${bodyHeaders}\r\n${payload}`),
    );
    let filled = 0;
    let headEnd = -1;
    let length = -1;
    for (;;) {
      if (filled === this.#buffer.length) throw new Error("answer larger than the client buffer");
      const n = await this.#conn.read(this.#buffer.subarray(filled));
      if (n === null) throw new Error("the server closed the connection");
      filled += n;
      if (headEnd < 0) {
        const text = decoder.decode(this.#buffer.subarray(0, filled));
        const end = text.indexOf("\r\n\r\n");
        if (end < 0) continue;
        headEnd = encoder.encode(text.slice(0, end + 4)).length;
        const head = text.slice(0, end);
        const match = /\r\ncontent-length:\s*(\d+)/i.exec(head);
        if (!match) throw new Error(`no content-length in the answer:\n${head}`);
        length = Number(match[1]);
      }
      if (filled - headEnd >= length) {
        const status = Number(decoder.decode(this.#buffer.subarray(9, 12)));
        const text = decoder.decode(this.#buffer.subarray(headEnd, headEnd + length));
        return { status, text };
      }
    }
  }

  async #writeAll(bytes: Uint8Array): Promise<void> {
    for (let off = 0; off < bytes.length;) off += await this.#conn.write(bytes.subarray(off));
  }

  /** Close the connection. */
  [Symbol.dispose](): void {
    this.#conn.close();
  }
}
