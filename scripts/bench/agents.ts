/**
 * Benchmark: the agent runtime's own cost per turn, beside the upstream's, through the real
 * server and the official event stream.
 *
 * - **Turn without a tool call**: the time from posting the message to reading
 *   `agent.session.idle` on an open event stream, minus the time the upstream took to answer
 *   (measured in the upstream, from the request's arrival to its last byte queued). p50 over 50
 *   turns; goal under 5 ms.
 * - **A `shell` tool call** (`true`): the tool span of the turn's trace (the server's whole
 *   handling of the call: items and events stored and sent, guards, spawn, exit), beside the
 *   round trip of `POST /process/shell` for the same command, in the same run, interleaved.
 *   p50 of each over 50; goal: the tool call costs under 2 ms more.
 * - **100 subscribers** on one session while a turn of 200 text deltas runs: each must receive
 *   every event, in the same order; prints the time until the last one read the idle event.
 *
 * The upstream is a small scripted Responses API server on a thread of its own in this process
 * (SSE, no model): `agents_upstream.ts`.
 *
 * `deno run -A scripts/bench/agents.ts [--turns 50]`
 *
 * @module
 */

import { parseArgs } from "node:util";
import { readEvents } from "../../tests/server/agents/runtime_helpers.ts";
import { startTestServer, type TestServer } from "../../tests/helpers/server.ts";
import { startBenchUpstream } from "./agents_upstream.ts";

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))];
}

/** Read a session's events until its idle event; returns the event ids. */
async function untilIdle(response: Response): Promise<string[]> {
  const events = await readEvents(response, (e) => e.type === "agent.session.idle");
  if (events.at(-1)?.event.type !== "agent.session.idle") {
    throw new Error("stream ended before idle");
  }
  return events.map((e) => e.id);
}

interface Span {
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
}

/** The spans of a session's latest trace. */
async function lastTraceSpans(server: TestServer, sessionId: string): Promise<Span[]> {
  const traces = await (await server.fetch(
    `/v1/agents/sessions/${sessionId}/traces?limit=1&order=desc`,
  )).json();
  return traces.data[0].otlp.resourceSpans[0].scopeSpans[0].spans;
}

async function turn(server: TestServer, sessionId: string, text: string): Promise<number> {
  const stream = await server.fetch(`/v1/agents/sessions/${sessionId}/events`);
  const start = performance.now();
  const posted = await server.post(`/v1/agents/sessions/${sessionId}/events`, {
    events: [{
      type: "agent.session.input.message",
      input: [{ role: "user", content: [{ type: "input_text", text }] }],
    }],
  });
  if (posted.status !== 202) throw new Error(`events answered ${posted.status}`);
  await posted.body?.cancel();
  await untilIdle(stream);
  return performance.now() - start;
}

/** Run the benchmark; returns the p50 overheads in milliseconds. */
export async function main(args: string[] = Deno.args) {
  const { values } = parseArgs({ args, options: { turns: { type: "string", default: "50" } } });
  const turns = Number(values.turns);
  const upstream = await startBenchUpstream();
  await using server = await startTestServer({
    policy: { endpoints: { agents: true }, audit: "off" },
    env: { OPENAI_BASE_URL: upstream.url, OPENAI_API_KEY: "sk-bench" },
    args: ["--data-dir", await Deno.makeTempDir({ prefix: "sandbar-bench-data-" })],
  });
  try {
    const env = await (await server.post("/v1/agents/environments", {
      environment: { type: "openai_hosted" },
    })).json();
    const session = await (await server.post("/v1/agents/sessions", {
      environment: { type: "openai_hosted", environment_id: env.id },
      agent: { model: "gpt-bench" },
    })).json();
    const workspace = `${server.root}/agent-environments/${env.id}`;

    // Turns without a tool call; beside each, one plain round trip (a session retrieve).
    const overhead: number[] = [];
    const inTrace: number[] = [];
    const roundTrip: number[] = [];
    for (let i = 0; i < 5 + turns; i++) {
      upstream.push({ kind: "message", deltas: 1 });
      const before = upstream.count();
      const total = await turn(server, session.id, `q${i}`);
      const up = upstream.timeSince(before);
      const t0 = performance.now();
      await (await server.fetch(`/v1/agents/sessions/${session.id}`)).body?.cancel();
      const rt = performance.now() - t0;
      if (i < 5) continue;
      overhead.push(total - up);
      roundTrip.push(rt);
      const spans = await lastTraceSpans(server, session.id);
      const ms = (s: Span) => Number(BigInt(s.endTimeUnixNano) - BigInt(s.startTimeUnixNano)) / 1e6;
      inTrace.push(
        ms(spans[0]) -
          spans.filter((s) => s.name.startsWith("model ")).reduce((a, s) => a + ms(s), 0),
      );
    }

    // A shell tool call, beside the shell endpoint for the same command.
    const toolSpans: number[] = [];
    const endpoint: number[] = [];
    for (let i = 0; i < 5 + turns; i++) {
      upstream.push({ kind: "shell" }, { kind: "message", deltas: 1 });
      await turn(server, session.id, `s${i}`);
      const t0 = performance.now();
      const res = await server.post("/process/shell", { argv: ["true"], cwd: workspace });
      await res.body?.cancel();
      const shellMs = performance.now() - t0;
      if (i < 5) continue;
      endpoint.push(shellMs);
      const spans = await lastTraceSpans(server, session.id);
      const tool = spans.find((s) => s.name === "tool shell")!;
      toolSpans.push(Number(BigInt(tool.endTimeUnixNano) - BigInt(tool.startTimeUnixNano)) / 1e6);
    }

    // 100 subscribers during a turn of 200 deltas.
    const subscribers = await Promise.all(
      Array.from({ length: 100 }, () => server.fetch(`/v1/agents/sessions/${session.id}/events`)),
    );
    const reading = subscribers.map((r) => untilIdle(r));
    upstream.push({ kind: "message", deltas: 200 });
    const start = performance.now();
    await (await server.post(`/v1/agents/sessions/${session.id}/events`, {
      events: [{
        type: "agent.session.input.message",
        input: [{ role: "user", content: [{ type: "input_text", text: "fan out" }] }],
      }],
    })).body?.cancel();
    const received = await Promise.all(reading);
    const fanOut = performance.now() - start;
    const reference = JSON.stringify(received[0]);
    const same = received.every((ids) => JSON.stringify(ids) === reference);

    const p50 = {
      turn: percentile(overhead, 0.5),
      tool: percentile(toolSpans, 0.5),
      shell: percentile(endpoint, 0.5),
    };
    console.log(
      `turn without a tool call, end to end minus the upstream: p50 ${
        p50.turn.toFixed(2)
      } ms, p90 ${percentile(overhead, 0.9).toFixed(2)} ms (goal < 5 ms)`,
    );
    console.log(
      `  of which in the turn's own span, outside model calls: p50 ${
        percentile(inTrace, 0.5).toFixed(2)
      } ms; one plain request's round trip for scale: p50 ${
        percentile(roundTrip, 0.5).toFixed(2)
      } ms`,
    );
    console.log(
      `shell tool call (trace span): p50 ${p50.tool.toFixed(2)} ms; ` +
        `POST /process/shell round trip: p50 ${p50.shell.toFixed(2)} ms; ` +
        `difference ${(p50.tool - p50.shell).toFixed(2)} ms (goal < 2 ms)`,
    );
    console.log(
      `100 subscribers: ${received[0].length} events each, ` +
        `${same ? "all identical" : "DIFFERENT"}; last idle read after ${fanOut.toFixed(1)} ms`,
    );
    if (!same) throw new Error("subscribers received different events");
    return p50;
  } finally {
    upstream.close();
  }
}

if (import.meta.main) await main();
