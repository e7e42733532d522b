/**
 * The scripted Responses upstream of `agents.ts`, on a thread of its own: a real model server is
 * another machine, so its answers must not wait for the benchmark's client to yield its event
 * loop (sharing one thread added 0.3–0.7 ms to every turn's measured overhead). It answers each
 * request with the next script it was sent, waiting for one if none is queued yet, and records
 * how long it took (request arrival to last byte queued) in shared memory.
 *
 * @module
 */

/** What the next upstream answer is. */
export type Script = { kind: "message"; deltas: number } | { kind: "shell" };

/** Slots of the shared timing buffer. */
const MAX_TIMES = 4096;

/** The upstream, seen from the benchmark's thread. */
export interface BenchUpstream {
  /** Its base URL (`…/v1`). */
  url: string;
  /** Queue the next answers. */
  push(...scripts: Script[]): void;
  /** How many answers it has given. */
  count(): number;
  /** The total time of the answers from number `from` on, in milliseconds. */
  timeSince(from: number): number;
  /** Stop it. */
  close(): void;
}

/** Start the upstream's thread. */
export async function startBenchUpstream(): Promise<BenchUpstream> {
  const shared = new SharedArrayBuffer(8 + 8 * MAX_TIMES);
  const counter = new Int32Array(shared, 0, 1);
  const times = new Float64Array(shared, 8, MAX_TIMES);
  const worker = new Worker(import.meta.url, { type: "module", name: "bench-upstream" });
  const ready = Promise.withResolvers<string>();
  worker.onmessage = (e: MessageEvent<{ url: string }>) => ready.resolve(e.data.url);
  worker.onerror = (e) => ready.reject(new Error(e.message));
  worker.postMessage({ shared });
  const url = await ready.promise;
  return {
    url,
    push: (...scripts) => worker.postMessage({ scripts }),
    count: () => Atomics.load(counter, 0),
    timeSince(from) {
      let total = 0;
      for (let i = from; i < Atomics.load(counter, 0); i++) total += times[i % MAX_TIMES];
      return total;
    },
    close: () => worker.terminate(),
  };
}

const frame = (e: Record<string, unknown>) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;

function answer(script: Script, n: number): string {
  if (script.kind === "shell") {
    return frame({ type: "response.created", response: { id: `resp_${n}` } }) +
      frame({
        type: "response.output_item.done",
        item: {
          type: "function_call",
          id: `fc_${n}`,
          call_id: `call_${n}`,
          name: "shell",
          arguments: JSON.stringify({ command: ["true"] }),
        },
      }) +
      frame({ type: "response.completed", response: { output: [] } });
  }
  const id = `msg_${n}`;
  let out = frame({ type: "response.created", response: { id: `resp_${n}` } });
  out += frame({ type: "response.output_item.added", item: { type: "message", id } });
  for (let i = 0; i < script.deltas; i++) {
    out += frame({ type: "response.output_text.delta", item_id: id, delta: `w${i} ` });
  }
  out += frame({
    type: "response.output_item.done",
    item: { type: "message", id, content: [{ type: "output_text", text: "done" }] },
  });
  return out + frame({
    type: "response.completed",
    response: { output: [], usage: { input_tokens: 5, output_tokens: 5, total_tokens: 10 } },
  });
}

/** The worker's side. */
function serveUpstream(shared: SharedArrayBuffer): void {
  const counter = new Int32Array(shared, 0, 1);
  const times = new Float64Array(shared, 8, MAX_TIMES);
  const queue: Script[] = [];
  const waiting: ((s: Script) => void)[] = [];
  const scope = self as unknown as {
    onmessage: ((e: MessageEvent<{ scripts: Script[] }>) => void) | null;
    postMessage(m: unknown): void;
  };
  scope.onmessage = (e) => {
    for (const s of e.data.scripts) {
      const w = waiting.shift();
      if (w) w(s);
      else queue.push(s);
    }
  };
  const encoder = new TextEncoder();
  let n = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const start = performance.now();
    await req.text();
    let waited = 0;
    let script = queue.shift();
    if (!script) {
      // A script that has not arrived yet is the benchmark's wait, not the upstream's time.
      const w0 = performance.now();
      script = await new Promise<Script>((r) => waiting.push(r));
      waited = performance.now() - w0;
    }
    const body = encoder.encode(answer(script, ++n));
    const i = Atomics.load(counter, 0);
    times[i % MAX_TIMES] = performance.now() - start - waited;
    Atomics.store(counter, 0, i + 1);
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  scope.postMessage({ url: `http://127.0.0.1:${server.addr.port}/v1` });
}

/** In a worker (`WorkerGlobalScope` exists there only), this module is the upstream. */
if ("WorkerGlobalScope" in globalThis) {
  const scope = self as unknown as {
    onmessage: ((e: MessageEvent<{ shared: SharedArrayBuffer }>) => void) | null;
  };
  scope.onmessage = (e) => serveUpstream(e.data.shared);
}
