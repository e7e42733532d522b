/**
 * `POST /process/shell` (run and wait) and `POST /process/shell/stream` (run, streaming NDJSON
 * ProcessChunks). Both kill the process group when the client goes away.
 *
 * @module
 */

import { exitFields, runToEnd, spawnRequest, spawnShell } from "../../process/start.ts";
import type { ProcessEntry } from "../../process/table.ts";
import type { EndpointHandler } from "../../pipeline/handler.ts";
import { readBody } from "../../request_reader.ts";
import { DEFAULT_MAX_OUTPUT, ShellBody } from "./schemas.ts";

/** Default timeout of `shell` and `shell_stream`, in seconds (the SDK's `commands.run`). */
const DEFAULT_TIMEOUT = 60;

/** `POST /process/shell`. */
export const shell: EndpointHandler = async (c) => {
  const body = await readBody(c, ShellBody);
  const request = await spawnRequest(c.var.state, body, DEFAULT_TIMEOUT);
  request.stdinText = body.stdin;
  const result = await runToEnd(
    c.var.state,
    c.var.identity.id,
    request,
    body.max_output_bytes ?? DEFAULT_MAX_OUTPUT,
    c.req.raw.signal,
  );
  return c.json(result);
};

const encoder = new TextEncoder();

function line(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value) + "\n");
}

/** `POST /process/shell/stream`. */
export const shellStream: EndpointHandler = async (c) => {
  const body = await readBody(c, ShellBody);
  const state = c.var.state;
  const request = await spawnRequest(state, body, DEFAULT_TIMEOUT);
  request.stdinText = body.stdin;
  // A reader that stops reading costs at most this many queued bytes; beyond it output is
  // dropped and counted on the exit line.
  const queueLimit = body.max_output_bytes ?? DEFAULT_MAX_OUTPUT;
  const dropped = { stdout: 0, stderr: 0 };
  const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const spawned: { entry?: ProcessEntry } = {};
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    cancel() {
      spawned.entry?.process.kill("SIGKILL");
    },
  }, new ByteLengthQueuingStrategy({ highWaterMark: 64 * 1024 }));
  const send = (type: "stdout" | "stderr", text: string, bytes: number) => {
    if (text === "") return;
    if ((controller.desiredSize ?? 0) < -queueLimit) {
      dropped[type] += bytes;
      return;
    }
    try {
      controller.enqueue(line({ type, data: text, exit_code: null }));
    } catch { /* the client went away */ }
  };
  const entry = spawned.entry = spawnShell(state, c.var.identity.id, request, (type, bytes) => {
    send(type, decoders[type].decode(bytes, { stream: true }), bytes.byteLength);
  });
  entry.process.exited.then((exit) => {
    for (const type of ["stdout", "stderr"] as const) send(type, decoders[type].decode(), 0);
    const last: Record<string, unknown> = { type: "exit", data: "", ...exitFields(exit) };
    if (dropped.stdout || dropped.stderr) {
      last.stdout_dropped = dropped.stdout;
      last.stderr_dropped = dropped.stderr;
    }
    try {
      controller.enqueue(line(last));
      controller.close();
    } catch { /* the client went away */ }
  });
  return new Response(stream, {
    headers: {
      "content-type": "application/x-ndjson",
      "x-process-id": String(entry.process.pid),
      "cache-control": "no-store",
    },
  });
};
