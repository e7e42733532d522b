import assert from "node:assert/strict";
import { LineSplitter, readLines } from "../../engine/line_reader.ts";
import { FLUSH_LINES, LineWriter } from "../../engine/line_writer.ts";

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

Deno.test("a run of lines decodes as the lines one by one would, BOMs and overlong lines included", () => {
  const text = "\uFEFF{}\nok\n" + "x".repeat(12) + "\nlast\r\n";
  const expected = ["line:\uFEFF{}", "line:ok", "overlong:xxx:12", "line:last"];
  assert.deepEqual(split([text]), expected);
  assert.deepEqual(split([...text]), expected);
});

/** A byte stream like a pipe: it fills the reader's buffer with the next piece. */
function pipeLike(pieces: string[]): ReadableStream<Uint8Array> {
  const queue = pieces.map((piece) => new TextEncoder().encode(piece));
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      const piece = queue.shift();
      if (!piece) {
        controller.close();
        return controller.byobRequest?.respond(0);
      }
      const view = controller.byobRequest!.view as Uint8Array;
      view.set(piece);
      controller.byobRequest!.respond(piece.length);
    },
  });
}

Deno.test("readLines reuses its buffer, and a line split across reads survives the reuse", async () => {
  const seen: string[] = [];
  const sink = {
    line: (text: string) => seen.push(text),
    overlong: () => seen.push("overlong"),
    partial: (head: string) => seen.push(`partial:${head}`),
  };
  await readLines(
    pipeLike(['{"a":', '1}\n{"b"', ":2}\nhé", "llo\n", "tail"]),
    new LineSplitter(100, sink),
  );
  assert.deepEqual(seen, ['{"a":1}', '{"b":2}', "héllo", "partial:tail"]);
});

/** A sink whose every write waits until the test lets it finish, like a pipe nobody reads. */
function heldSink() {
  const writes: string[] = [];
  let release = () => {};
  let fail: Error | null = null;
  const stream = new WritableStream<Uint8Array>({
    write(chunk) {
      writes.push(new TextDecoder().decode(chunk));
      if (fail) throw fail;
      return new Promise<void>((resolve) => release = resolve);
    },
  }, { highWaterMark: 1 });
  return {
    stream,
    /** Settles once the stream has started, after which a write reaches the sink at once. */
    started: new Promise((resolve) => setTimeout(resolve, 0)),
    writes,
    release: () => release(),
    failNext: (error: Error) => fail = error,
  };
}

Deno.test("lines queued in one tick go out in one write", async () => {
  const sink = heldSink();
  const writer = new LineWriter(sink.stream);
  const written = [writer.write("a"), writer.write("b"), writer.write("c")];
  await Promise.resolve();
  assert.deepEqual(sink.writes, ["a\nb\nc\n"]);
  sink.release();
  await Promise.all(written);
  const closing = writer.close();
  await closing;
});

Deno.test("a long burst starts writing before the tick ends; a held write holds the rest back in order", async () => {
  const sink = heldSink();
  const writer = new LineWriter(sink.stream);
  await sink.started;
  const lines = Array.from({ length: FLUSH_LINES * 3 }, (_, i) => `${i}`);
  const first = lines.slice(0, FLUSH_LINES).map((line) => writer.write(line));
  // The first batch went out synchronously, without waiting for the end of the tick.
  assert.deepEqual(sink.writes, [first.map((_, i) => `${i}\n`).join("")]);
  const rest = lines.slice(FLUSH_LINES).map((line) => writer.write(line));
  let restWritten = false;
  void Promise.all(rest).then(() => restWritten = true);
  await new Promise((resolve) => setTimeout(resolve, 10));
  // Backpressure: nothing more is written while the first write is held.
  assert.equal(sink.writes.length, 1);
  assert.equal(restWritten, false);
  sink.release();
  await Promise.all(first);
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(sink.writes.length, 2);
  sink.release();
  await Promise.all(rest);
  assert.equal(sink.writes.join(""), lines.map((line) => `${line}\n`).join(""));
  await writer.close();
});

Deno.test("a failed write rejects its lines, reports how many were lost, and refuses more", async () => {
  const sink = heldSink();
  const lost: number[] = [];
  const writer = new LineWriter(sink.stream, (_error, lines) => lost.push(lines));
  sink.failNext(new Error("broken pipe"));
  const written = writer.write("a");
  assert.equal(writer.queue("b"), true);
  await assert.rejects(written, /broken pipe/);
  assert.deepEqual(lost, [2]);
  assert.equal(writer.closed, true);
  assert.equal(writer.queue("c"), false);
  await assert.rejects(writer.write("d"), /broken pipe/);
  await writer.close();
});

Deno.test("close writes what is queued first", async () => {
  const sink = heldSink();
  const writer = new LineWriter(sink.stream);
  writer.queue("a");
  writer.queue("b");
  const closed = writer.close();
  await Promise.resolve();
  sink.release();
  await closed;
  assert.deepEqual(sink.writes, ["a\nb\n"]);
  assert.equal(writer.queue("c"), false);
});

Deno.test("a blocking output is written in place, to the last byte of a partial write", async () => {
  const written: string[] = [];
  let broken = false;
  const output = {
    // Takes at most 3 bytes per call, like a pipe with little room.
    writeSync(bytes: Uint8Array) {
      if (broken) throw new Error("broken pipe");
      written.push(new TextDecoder().decode(bytes.subarray(0, 3)));
      return Math.min(3, bytes.length);
    },
  };
  const lost: number[] = [];
  const writer = new LineWriter(output, (_error, lines) => lost.push(lines));
  const lines = Array.from({ length: FLUSH_LINES }, (_, i) => `line ${i}`);
  for (const line of lines) writer.queue(line);
  // The burst was written before the tick ended.
  assert.equal(written.join(""), lines.map((line) => `${line}\n`).join(""));
  await writer.write("more");
  assert.ok(written.join("").endsWith("line 15\nmore\n"));
  broken = true;
  await assert.rejects(writer.write("lost"), /broken pipe/);
  assert.deepEqual(lost, [1]);
  assert.equal(writer.queue("after"), false);
  await writer.close();
});
