/**
 * Background processes: `process_start`, `process_list`, `process_get`, `process_signal`,
 * `process_stdin` and `process_output`. Shapes are in `docs/server/process.md`.
 *
 * @module
 */

import type { Context } from "hono";
import { z } from "zod";
import { ApiError } from "../../errors.ts";
import type { OutputChunk } from "../../process/output.ts";
import { type ProcessEntry, processTable } from "../../process/table.ts";
import type { ServerEnv } from "../../state.ts";
import type { EndpointHandler } from "../../pipeline/handler.ts";
import { queryBool, querySeconds, readBody } from "../../request_reader.ts";
import { exitFields, spawnFailure, spawnRequest } from "../../process/start.ts";
import { StartBody } from "./schemas.ts";

/** The ProcessInfo object. */
export function processInfo(e: ProcessEntry) {
  const p = e.process;
  return {
    pid: p.pid,
    kind: e.kind,
    tag: e.tag,
    cmd: e.cmd,
    argv: e.argv,
    cwd: e.cwd,
    started_at: p.startedAt.toISOString(),
    ended_at: e.exit?.endedAt.toISOString() ?? null,
    running: e.exit === null,
    exit_code: e.exit?.exitCode ?? null,
    signal: e.exit?.signal ?? null,
    timed_out: e.exit?.timedOut ?? false,
    execution_time: e.exit?.executionTime ?? p.elapsed,
    stdin_open: p.stdinOpen,
    output_bytes: e.log?.total ?? 0,
    dropped_bytes: e.log?.dropped ?? 0,
  };
}

function lookup(c: Context<ServerEnv>): ProcessEntry {
  const raw = c.req.param("pid") ?? "";
  if (!/^[1-9][0-9]{0,9}$/.test(raw)) {
    throw new ApiError("invalid_request", `pid must be a positive integer, got ${raw}`, {
      param: "pid",
    });
  }
  const entry = processTable(c.var.state).get(Number(raw), c.var.identity.id);
  if (!entry) throw new ApiError("not_found", `No process ${raw}`);
  return entry;
}

/** `POST /process/start`. */
export const processStart: EndpointHandler = async (c) => {
  const body = await readBody(c, StartBody);
  const state = c.var.state;
  const request = await spawnRequest(state, body, 0);
  request.stdin = body.stdin ?? true;
  let entry: ProcessEntry;
  try {
    entry = processTable(state).spawn(request, {
      identity: c.var.identity.id,
      kind: "background",
      tag: body.tag ?? null,
      bufferBytes: body.buffer_bytes ?? 1024 * 1024,
    });
  } catch (e) {
    throw spawnFailure(e, request);
  }
  return c.json(processInfo(entry));
};

/** `GET /process`. */
export const processList: EndpointHandler = (c) => {
  const onlyRunning = queryBool(c, "running", false);
  const entries = processTable(c.var.state).list(c.var.identity.id)
    .filter((e) => !onlyRunning || e.exit === null);
  return c.json({ processes: entries.map(processInfo) });
};

/** `GET /process/:pid`. */
export const processGet: EndpointHandler = async (c) => {
  const entry = lookup(c);
  if (queryBool(c, "wait", false) && entry.exit === null) {
    const wait = (querySeconds(c, "timeout", 300) ?? 30) * 1000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      entry.process.exited,
      new Promise((r) => (timer = setTimeout(r, wait))),
      new Promise((r) => c.req.raw.signal.addEventListener("abort", r, { once: true })),
    ]);
    clearTimeout(timer);
  }
  return c.json(processInfo(entry));
};

const SIGNALS: Readonly<Record<string, Deno.Signal>> = {
  "1": "SIGHUP",
  "2": "SIGINT",
  "3": "SIGQUIT",
  "9": "SIGKILL",
  "10": "SIGUSR1",
  "12": "SIGUSR2",
  "15": "SIGTERM",
  "18": "SIGCONT",
  "19": "SIGSTOP",
};
const SIGNAL_NAMES = new Set(Object.values(SIGNALS));

const SignalBody = z.strictObject({ signal: z.union([z.string(), z.number()]).optional() });

/** `POST /process/:pid/signal`. */
export const processSignal: EndpointHandler = async (c) => {
  const entry = lookup(c);
  const body = await readBody(c, SignalBody);
  const raw = String(body.signal ?? "SIGTERM").toUpperCase();
  const name = SIGNALS[raw] ?? (SIGNAL_NAMES.has(raw as Deno.Signal) ? raw as Deno.Signal : null) ??
    (SIGNAL_NAMES.has(`SIG${raw}` as Deno.Signal) ? `SIG${raw}` as Deno.Signal : null);
  if (!name) {
    throw new ApiError("invalid_arguments", `Signal ${body.signal} is not one this server sends`, {
      param: "signal",
    });
  }
  if (entry.exit !== null || !entry.process.kill(name)) {
    throw new ApiError("conflict", `Process ${entry.process.pid} has exited`);
  }
  return c.json({ pid: entry.process.pid, signal: name });
};

const StdinBody = z.strictObject({
  data: z.string().optional(),
  encoding: z.enum(["utf8", "utf-8", "base64"]).optional(),
  close: z.boolean().optional(),
});

function decodeBase64(text: string): Uint8Array {
  try {
    return Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0));
  } catch {
    throw new ApiError("invalid_arguments", "data is not base64", { param: "data" });
  }
}

/** `POST /process/:pid/stdin`. */
export const processStdin: EndpointHandler = async (c) => {
  const entry = lookup(c);
  const body = await readBody(c, StdinBody);
  const p = entry.process;
  if (entry.exit !== null) throw new ApiError("conflict", `Process ${p.pid} has exited`);
  if (!p.stdinOpen) throw new ApiError("conflict", `stdin of process ${p.pid} is closed`);
  const bytes = body.data === undefined
    ? new Uint8Array()
    : body.encoding === "base64"
    ? decodeBase64(body.data)
    : new TextEncoder().encode(body.data);
  if (bytes.byteLength > 0) {
    try {
      await p.write(bytes);
    } catch {
      throw new ApiError("conflict", `stdin of process ${p.pid} is closed`);
    }
  }
  if (body.close) await p.closeStdin();
  return c.json({ pid: p.pid, written: bytes.byteLength, stdin_open: p.stdinOpen });
};

function wireChunk(chunk: OutputChunk) {
  return { type: chunk.type, data: chunk.data, offset: chunk.offset };
}

/** `GET /process/:pid/output`. */
export const processOutput: EndpointHandler = (c) => {
  const entry = lookup(c);
  const log = entry.log;
  if (!log) {
    throw new ApiError("conflict", `Process ${entry.process.pid} streams its output to its caller`);
  }
  const rawOffset = c.req.query("offset") ?? "0";
  if (!/^\d{1,15}$/.test(rawOffset)) {
    throw new ApiError("invalid_arguments", "offset must be a non-negative integer", {
      param: "offset",
    });
  }
  let offset = Number(rawOffset);
  if (!queryBool(c, "follow", false)) {
    const slice = log.read(offset);
    return c.json({
      pid: entry.process.pid,
      chunks: slice.chunks.map(wireChunk),
      start_offset: slice.startOffset,
      next_offset: slice.nextOffset,
      dropped_bytes: slice.dropped,
      running: entry.exit === null,
      exit_code: entry.exit?.exitCode ?? null,
    });
  }
  const timeout = querySeconds(c, "timeout", 86400);
  const stop = new AbortController();
  const timer = timeout === undefined ? undefined : setTimeout(() => stop.abort(), timeout * 1000);
  const encoder = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (!stop.signal.aborted) {
        const slice = log.read(offset);
        if (slice.chunks.length > 0) {
          let dropped = slice.dropped;
          for (const chunk of slice.chunks) {
            const out: Record<string, unknown> = { ...wireChunk(chunk), exit_code: null };
            if (dropped > 0) out.dropped = dropped;
            dropped = 0;
            controller.enqueue(encoder.encode(JSON.stringify(out) + "\n"));
          }
          offset = slice.nextOffset;
          return;
        }
        if (log.closed) {
          await entry.process.exited;
          controller.enqueue(encoder.encode(
            JSON.stringify({ type: "exit", data: "", ...exitFields(entry.exit!), offset }) + "\n",
          ));
          break;
        }
        await log.waitBeyond(offset, stop.signal);
      }
      clearTimeout(timer);
      controller.close();
    },
    cancel() {
      clearTimeout(timer);
      stop.abort();
    },
  }, { highWaterMark: 0 });
  return new Response(stream, {
    headers: { "content-type": "application/x-ndjson", "cache-control": "no-store" },
  });
};
