/**
 * Starting the real server for a test: `deno run -A server/main.ts` as a child process on free
 * ports, through the launcher (so under narrowed Deno permissions, as in production), with a
 * fresh root directory. Nothing is mocked.
 *
 * @module
 */

import { fileURLToPath } from "node:url";

const MAIN = fileURLToPath(new URL("../../server/main.ts", import.meta.url));

/** Options of {@linkcode startTestServer}. */
export interface TestServerOptions {
  /** A policy object, or JSONC text, written to a file and passed with `--policy`. */
  policy?: Record<string, unknown> | string;
  /** Root directory; default a new temp directory (removed on close). */
  root?: string;
  /** `--commands` file. */
  commandsFile?: string;
  /** Extra environment for the server. */
  env?: Record<string, string>;
  /** Extra command-line arguments. */
  args?: string[];
  /** The default token; default a fixed test token. */
  token?: string;
  /** A program that runs the server (`deno …`) in its place, such as `setpriv` with options. */
  wrapper?: string[];
}

/** A running test server. */
export interface TestServer {
  /** `http://127.0.0.1:port`. */
  url: string;
  /** `ws://127.0.0.1:port`. */
  ptyUrl: string;
  /** The default identity's token. */
  token: string;
  /** The root directory. */
  root: string;
  /** The server's process id (the launcher's). */
  pid: number;
  /** Everything the server printed on stderr so far (audit lines go there). */
  stderr(): string;
  /** `fetch` against the server with the default token unless headers say otherwise. */
  fetch(path: string, init?: RequestInit & { token?: string | null }): Promise<Response>;
  /** `POST` of `body` as JSON (a string is sent as it is), with the default token. */
  post(
    path: string,
    body: unknown,
    init?: RequestInit & { token?: string | null },
  ): Promise<Response>;
  /** Stop the server and remove the temp root. */
  close(): Promise<void>;
  /** For `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** The token test servers use unless told otherwise. */
export const TEST_TOKEN = "test-token-0123456789abcdef";

/**
 * Start the real server.
 *
 * @example
 * ```ts ignore
 * await using server = await startTestServer({ policy: { preset: "readonly" } });
 * const res = await server.fetch("/capabilities");
 * ```
 */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const ownRoot = options.root === undefined;
  const root = options.root ?? await Deno.makeTempDir({ prefix: "sandbar-test-root-" });
  const args = ["run", "-A", MAIN, "--port", "0", "--pty-port", "0", "--root", root];
  let policyDir: string | undefined;
  if (options.policy !== undefined) {
    policyDir = await Deno.makeTempDir({ prefix: "sandbar-test-policy-" });
    const file = `${policyDir}/policy.jsonc`;
    const text = typeof options.policy === "string"
      ? options.policy
      : JSON.stringify(options.policy, null, 2);
    await Deno.writeTextFile(file, text);
    args.push("--policy", file);
  }
  if (options.commandsFile) args.push("--commands", options.commandsFile);
  args.push(...(options.args ?? []));
  const token = options.token ?? TEST_TOKEN;
  const [program, ...wrapperArgs] = [...(options.wrapper ?? []), Deno.execPath()];
  const child = new Deno.Command(program, {
    args: [...wrapperArgs, ...args],
    env: { SVC_SERVER_TOKEN: token, ...options.env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let err = "";
  const errDone = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) err += chunk;
  })();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  let ready: { url: string; pty_url: string } | undefined;
  while (!ready) {
    const { value, done } = await reader.read();
    if (done) {
      await child.status;
      await errDone;
      if (ownRoot) await Deno.remove(root, { recursive: true }).catch(() => {});
      if (policyDir) await Deno.remove(policyDir, { recursive: true }).catch(() => {});
      throw new Error(`server exited before listening:\n${err}`);
    }
    out += value;
    const line = out.split("\n").find((l) => l.startsWith('{"event":"listening"'));
    if (line) ready = JSON.parse(line);
  }
  const outDone = (async () => {
    while (!(await reader.read()).done) { /* drain */ }
  })();
  let closed: Promise<void> | undefined;
  const close = () =>
    closed ??= (async () => {
      try {
        child.kill("SIGTERM");
      } catch { /* gone */ }
      await child.status;
      await Promise.all([errDone, outDone]);
      if (ownRoot) await Deno.remove(root, { recursive: true }).catch(() => {});
      if (policyDir) await Deno.remove(policyDir, { recursive: true }).catch(() => {});
    })();
  const server: TestServer = {
    url: ready.url,
    ptyUrl: ready.pty_url,
    token,
    root,
    pid: child.pid,
    stderr: () => err,
    fetch(path, init = {}) {
      const headers = new Headers(init.headers);
      const t = init.token === undefined ? token : init.token;
      if (t !== null && !headers.has("authorization") && !headers.has("x-access-token")) {
        headers.set("authorization", `Bearer ${t}`);
      }
      return fetch(`${ready!.url}${path}`, { ...init, headers });
    },
    post(path, body, init = {}) {
      const headers = new Headers(init.headers);
      if (!headers.has("content-type")) headers.set("content-type", "application/json");
      const text = typeof body === "string" ? body : JSON.stringify(body);
      return server.fetch(path, { ...init, method: "POST", headers, body: text });
    },
    close,
    [Symbol.asyncDispose]: close,
  };
  return server;
}

/** A server started by {@linkcode startServerWithFewDescriptors}; disposing stops it. */
export interface FewDescriptorsServer extends AsyncDisposable {
  /** The server's process (`bash` exec'd into `deno`). */
  child: Deno.ChildProcess;
  /** Its listening line's `url`. */
  url: string;
}

/**
 * Start `server/main.ts --no-narrow ARGS` in-process (no launcher) with a hard limit of 256
 * descriptors (bash's `ulimit -n` sets both), so that a few hundred connections end
 * `Deno.serve`'s accept loop with EMFILE; resolves once it prints its listening line.
 */
export async function startServerWithFewDescriptors(
  args: string[],
  env: Record<string, string>,
): Promise<FewDescriptorsServer> {
  const child = new Deno.Command("bash", {
    args: [
      "-c",
      'ulimit -n 256 && exec "$0" run -A "$1" --no-narrow "${@:2}"',
      Deno.execPath(),
      MAIN,
      ...args,
    ],
    env,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const { url } = await listeningLine(child.stdout);
  return {
    child,
    url,
    async [Symbol.asyncDispose]() {
      child.kill("SIGTERM");
      await child.status;
      await child.stdout.cancel().catch(() => {});
      await child.stderr.cancel();
    },
  };
}

/**
 * The first line a server prints on `stdout`, its listening line, parsed; throws when the stream
 * ends first, or when the line is not the listening line.
 */
export async function listeningLine(
  stdout: ReadableStream<Uint8Array>,
): Promise<{ event: "listening"; url: string; pty_url: string }> {
  const lines = stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await lines.read();
    if (done) throw new Error(`the server did not start: ${out}`);
    out += value;
  }
  lines.releaseLock();
  const line = JSON.parse(out.slice(0, out.indexOf("\n")));
  if (line.event !== "listening") throw new Error(`not a listening line: ${out}`);
  return line;
}

/** Close every connection of `conns`, those the server closed already included. */
export function closeAll(conns: Deno.Conn[]): void {
  for (const c of conns.splice(0)) {
    try {
      c.close();
    } catch { /* closed by the server */ }
  }
}
