/**
 * One trace per root turn, in OTLP JSON (an `ExportTraceServiceRequest`): a span for the turn,
 * one for each upstream model call (model, token usage) and one for each tool call (the tool,
 * its command and exit code, its duration). Traces are kept in the store (`traces` table, by
 * turn id) and, when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
 * is set, also sent there over OTLP/HTTP JSON, without holding up the turn.
 *
 * @module
 */

import { SERVER_VERSION as VERSION } from "../../version.ts";

type Value = string | number | boolean;

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: { key: string; value: Record<string, unknown> }[];
  status: { code: number; message?: string };
}

function hex(bytes: number): string {
  let out = "";
  for (const b of crypto.getRandomValues(new Uint8Array(bytes))) {
    out += b.toString(16).padStart(2, "0");
  }
  return out;
}

function nowNano(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n;
}

function attribute(key: string, value: Value) {
  if (typeof value === "string") return { key, value: { stringValue: value } };
  if (typeof value === "boolean") return { key, value: { boolValue: value } };
  return Number.isInteger(value)
    ? { key, value: { intValue: String(value) } }
    : { key, value: { doubleValue: value } };
}

/** A span being timed. */
export interface OpenSpan {
  /** End it with its attributes; `error` marks it failed. */
  end(attributes: Record<string, Value>, error?: string): void;
}

/** SpanKind of OTLP. */
const KIND = { internal: 1, client: 3 } as const;

/**
 * The trace of one turn.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TraceBuilder } from "./traces.ts";
 * const trace = new TraceBuilder("turn_1", "sess_1");
 * trace.span("tool shell", "internal").end({ "process.exit.code": 0 });
 * const otlp = trace.finish({ "agents.turn.status": "completed" });
 * const spans = otlp.resourceSpans[0].scopeSpans[0].spans;
 * assert.deepEqual(spans.map((s) => s.name), ["turn", "tool shell"]);
 * assert.equal(spans[1].parentSpanId, spans[0].spanId);
 * ```
 */
export class TraceBuilder {
  readonly #traceId = hex(16);
  readonly #rootId = hex(8);
  readonly #start = nowNano();
  readonly #spans: Span[] = [];
  readonly #turnId: string;
  readonly #sessionId: string;

  /** A trace for a turn. */
  constructor(turnId: string, sessionId: string) {
    this.#turnId = turnId;
    this.#sessionId = sessionId;
  }

  /** Start a child span of the turn. */
  span(name: string, kind: keyof typeof KIND): OpenSpan {
    const start = nowNano();
    return {
      end: (attributes, error) => {
        this.#spans.push({
          traceId: this.#traceId,
          spanId: hex(8),
          parentSpanId: this.#rootId,
          name,
          kind: KIND[kind],
          startTimeUnixNano: String(start),
          endTimeUnixNano: String(nowNano()),
          attributes: Object.entries(attributes).map(([k, v]) => attribute(k, v)),
          status: error ? { code: 2, message: error } : { code: 1 },
        });
      },
    };
  }

  /** The whole trace, with the turn's span ended now. */
  finish(attributes: Record<string, Value>, error?: string) {
    const root: Span = {
      traceId: this.#traceId,
      spanId: this.#rootId,
      name: "turn",
      kind: KIND.internal,
      startTimeUnixNano: String(this.#start),
      endTimeUnixNano: String(nowNano()),
      attributes: Object.entries({
        "agents.session.id": this.#sessionId,
        "agents.turn.id": this.#turnId,
        ...attributes,
      }).map(([k, v]) => attribute(k, v)),
      status: error ? { code: 2, message: error } : { code: 1 },
    };
    return {
      resourceSpans: [{
        resource: {
          attributes: [
            attribute("service.name", "sandbar"),
            attribute("service.version", VERSION),
          ],
        },
        scopeSpans: [{
          scope: { name: "sandbar.agents", version: VERSION },
          spans: [root, ...this.#spans],
        }],
      }],
    };
  }
}

/** Send a trace to an OTLP/HTTP collector; a failure is reported once per URL, never thrown. */
export function exportTrace(url: string, otlp: unknown): Promise<void> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(otlp),
    signal: AbortSignal.timeout(10_000),
  }).then(async (r) => {
    await r.body?.cancel();
    if (!r.ok) warnOnce(url, `answered ${r.status}`);
  }, (e) => warnOnce(url, (e as Error).message));
}

const warned = new Set<string>();

function warnOnce(url: string, why: string): void {
  if (warned.has(url)) return;
  warned.add(url);
  console.error(`sandbar: exporting traces to ${url} failed: ${why}`);
}
