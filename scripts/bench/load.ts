/**
 * Shared pieces of the HTTP benchmarks: starting a server process pinned to one core, running
 * `wrk` pinned to the other, and summarising runs by their median. Loopback only, bounded.
 *
 * @module
 */

/** A server process started for a benchmark. */
export interface BenchProcess {
  /** The URL it listens on. */
  url: string;
  /** Stop it. */
  stop(): Promise<void>;
}

/** Whether a program is on PATH. */
export async function have(program: string): Promise<boolean> {
  try {
    const out = await new Deno.Command("sh", { args: ["-c", `command -v ${program}`] }).output();
    return out.success;
  } catch {
    return false;
  }
}

/**
 * Start `argv` (pinned to CPU 0 when `taskset` exists) and wait for its JSON listening line,
 * which carries either `url` or `port`.
 */
export async function startPinned(
  argv: string[],
  env: Record<string, string> = {},
): Promise<BenchProcess> {
  const pinned = await have("taskset") ? ["taskset", "-c", "0", ...argv] : argv;
  const child = new Deno.Command(pinned[0], {
    args: pinned.slice(1),
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  let url: string | undefined;
  while (!url) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`${argv.join(" ")} exited before listening`);
    buffered += value;
    for (const line of buffered.split("\n")) {
      if (!line.startsWith("{")) continue;
      const msg = JSON.parse(line);
      if (msg.event === "listening") url = msg.url ?? `http://127.0.0.1:${msg.port}`;
    }
  }
  const drained = (async () => {
    while (!(await reader.read()).done) { /* drain */ }
  })();
  return {
    url,
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
      await drained;
    },
  };
}

/** One wrk run: requests per second and non-2xx count. */
export interface WrkResult {
  /** Requests per second. */
  rps: number;
  /** Responses that were not 2xx or 3xx. */
  errors: number;
}

/** Run wrk (pinned to CPU 1) for `seconds` with `connections` against `url`. */
export async function wrk(
  url: string,
  headers: Record<string, string>,
  seconds = 5,
  connections = 50,
): Promise<WrkResult> {
  const args = ["-t1", `-c${connections}`, `-d${seconds}s`];
  for (const [k, v] of Object.entries(headers)) args.push("-H", `${k}: ${v}`);
  args.push(url);
  const argv = await have("taskset") ? ["taskset", "-c", "1", "wrk", ...args] : ["wrk", ...args];
  const out = await new Deno.Command(argv[0], { args: argv.slice(1), stdout: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1] ?? NaN);
  const errors = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(text)?.[1] ?? 0);
  return { rps, errors };
}

/** The median of numbers. */
export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}
