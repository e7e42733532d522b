/**
 * A download that never ends: 4 KiB every 20 ms until the client goes away. The network tests
 * use it to see a rule change cut a running download.
 *
 * @module
 */

/** A response whose body streams 4 KiB every 20 ms until it is cancelled. */
export function endlessResponse(): Response {
  let timer: ReturnType<typeof setInterval>;
  return new Response(
    new ReadableStream<Uint8Array>({
      start(c) {
        timer = setInterval(() => c.enqueue(new Uint8Array(4096)), 20);
      },
      cancel() {
        clearInterval(timer);
      },
    }),
  );
}
