/**
 * `serveEngine`: an engine process in a few lines. It wires the engine's handlers (through
 * {@linkcode EngineDispatcher}) to this process's stdin and stdout (through
 * {@linkcode StdioTransport}); when stdin closes, every run is aborted, what is queued is written,
 * and, with the real stdio, the process exits. The rules of the answers are the dispatcher's.
 *
 * @module
 */
import { EngineDispatcher, type EngineHandlers } from "./dispatcher.ts";
import { StdioTransport } from "./stdio_transport.ts";

/** Where an engine reads and writes; the process's stdio by default. */
export interface ServeOptions {
  /** Host messages come from here. Default: stdin. */
  input?: ReadableStream<Uint8Array>;
  /** Engine messages go here. Default: stdout. */
  output?: WritableStream<Uint8Array>;
  /** The longest request line accepted, in bytes. Default 64 MiB. */
  maxLineBytes?: number;
  /** Where problems are reported. Default: a line on stderr. */
  log?: (message: string) => void;
}

/**
 * Serves the protocol until the input ends; then, with the real stdio, exits. Given streams, it
 * resolves instead, which is how an engine can be driven in process.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { serveEngine } from "./mod.ts";
 * const requests = [
 *   { jsonrpc: "2.0", id: 1, method: "describe", params: { protocols: [1] } },
 *   { jsonrpc: "2.0", id: 2, method: "covers", params: {
 *     question: { kind: "sweep", subject: "s", schedule: "all", free: [] }, model: {},
 *   } },
 * ].map((message) => JSON.stringify(message) + "\n").join("");
 * const answers = new TransformStream<Uint8Array, Uint8Array>();
 * const text = new Response(answers.readable).text();
 * await serveEngine({
 *   describe: { name: "echo", version: "1.0.0", protocol: 1, answers: ["holds"] },
 * }, {
 *   input: new Blob([requests]).stream(),
 *   output: answers.writable,
 * });
 * // Each request is answered as soon as its handler is done, so answers may come in any order.
 * const byId = new Map((await text).trim().split("\n").map((line) => {
 *   const answer = JSON.parse(line);
 *   return [answer.id, answer];
 * }));
 * assert.equal(byId.get(1).result.name, "echo");
 * assert.deepEqual(byId.get(2), { jsonrpc: "2.0", id: 2, result: { covers: false } });
 * ```
 */
export async function serveEngine(
  handlers: EngineHandlers,
  options: ServeOptions = {},
): Promise<void> {
  const log = options.log ?? ((message: string) => console.error(`engine: ${message}`));
  const transport = new StdioTransport({
    input: options.input,
    output: options.output,
    maxLineBytes: options.maxLineBytes ?? 64 * 1024 * 1024,
    log,
  });
  const dispatcher = new EngineDispatcher(handlers, { send: (line) => transport.send(line), log });
  await transport.listen((line) => dispatcher.receive(line));
  dispatcher.abortAll(new Error("stdin closed"));
  await transport.close();
  if (!options.input) Deno.exit(0);
}
