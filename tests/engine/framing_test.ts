import assert from "node:assert/strict";
import { LineSplitter } from "../../engine/framing.ts";

function split(chunks: string[], max = 10) {
  const seen: string[] = [];
  const splitter = new LineSplitter(max, {
    line: (text) => seen.push(`line:${text}`),
    overlong: (head, bytes) => seen.push(`overlong:${head.slice(0, 3)}:${bytes}`),
    partial: (head, bytes) => seen.push(`partial:${head}:${bytes}`),
  });
  for (const chunk of chunks) splitter.push(new TextEncoder().encode(chunk));
  splitter.end();
  return seen;
}

Deno.test("lines are the same however the pipe splits them", () => {
  const whole = split(["ab\ncd\r\nef\n"]);
  assert.deepEqual(whole, ["line:ab", "line:cd", "line:ef"]);
  assert.deepEqual(split(["a", "b\nc", "d\r", "\nef", "\n"]), whole);
});

Deno.test("the length cap applies to a logical line, not to a chunk", () => {
  const expected = ["overlong:xxx:12", "line:ok"];
  assert.deepEqual(split(["xxxxxxxxxxxx\nok\n"]), expected);
  assert.deepEqual(split(["xxxx", "xxxx", "xxxx\n", "ok\n"]), expected);
  assert.deepEqual(split(["xxxxxxxxxx\n"]), ["line:xxxxxxxxxx"]);
});

Deno.test("bytes left without a newline are reported as partial", () => {
  assert.deepEqual(split(["done\n", '{"jsonrpc']), ["line:done", 'partial:{"jsonrpc:9']);
});

Deno.test("a multi-byte character split across chunks survives", () => {
  const bytes = new TextEncoder().encode("héllo\n");
  const seen: string[] = [];
  const splitter = new LineSplitter(100, {
    line: (t) => seen.push(t),
    overlong() {},
    partial() {},
  });
  splitter.push(bytes.subarray(0, 2));
  splitter.push(bytes.subarray(2));
  assert.deepEqual(seen, ["héllo"]);
});
