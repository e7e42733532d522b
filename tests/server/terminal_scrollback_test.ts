// The scrollback ring keeps exactly the last `capacity` bytes, whatever the sizes of the pushes.
import assert from "node:assert/strict";
import { Scrollback } from "../../server/pty/scrollback.ts";

Deno.test("scrollback keeps the most recent bytes across wrap-arounds", () => {
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  for (const capacity of [1, 2, 7, 64, 1000]) {
    const ring = new Scrollback(capacity);
    let all: number[] = [];
    for (let i = 0; i < 300; i++) {
      const n = Math.floor(random() * capacity * 2.5);
      const chunk = Uint8Array.from({ length: n }, (_, j) => (i * 31 + j) & 0xff);
      ring.push(chunk);
      all = all.concat([...chunk]).slice(-capacity);
      assert.equal(ring.size, all.length);
      assert.deepEqual([...ring.snapshot()], all, `capacity ${capacity}, push ${i}`);
    }
  }
});

Deno.test("an empty scrollback replays nothing", () => {
  assert.equal(new Scrollback(16).snapshot().length, 0);
});
