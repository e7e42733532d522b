// Code contexts over real HTTP with the real kernels: ipykernel for Python, Deno's Jupyter
// kernel for TypeScript, a persistent bash. State, restarts, independence, live output, rich
// results, errors, interrupts, output files, and no kernel left behind when the server is killed.
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../helpers/server.ts";

const hasKernel = new Deno.Command("/usr/bin/python3", {
  args: ["-c", "import ipykernel, jupyter_client, matplotlib, pandas"],
  stdout: "null",
  stderr: "null",
}).outputSync().success;
const ignore = !hasKernel; // needs python3-ipykernel, python3-matplotlib, python3-pandas

// deno-lint-ignore no-explicit-any
type Json = any;

async function post(server: TestServer, body: unknown): Promise<[number, Json]> {
  const res = await server.fetch("/code/run", {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "content-type": "application/json" },
  });
  return [res.status, await res.json()];
}

async function run(server: TestServer, body: Record<string, unknown>): Promise<Json> {
  const [status, got] = await post(server, body);
  assert.equal(status, 200, JSON.stringify(got));
  return got;
}

async function create(server: TestServer, body: Record<string, unknown>): Promise<Json> {
  const [status, got] = await post(server, { action: "create_context", ...body });
  assert.equal(status, 201, JSON.stringify(got));
  return got;
}

function alive(pid: number): boolean {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}

Deno.test({
  name: "contexts: state persists, restart clears it, two contexts are independent",
  ignore,
  async fn(t) {
    await using server = await startTestServer();
    await t.step("python", async () => {
      const a = await create(server, { language: "python" });
      const b = await create(server, { language: "python" });
      assert.equal(a.language, "python");
      assert.ok(a.pid > 0);
      await run(server, { code: "import math\nx = 41", context_id: a.id });
      const got = await run(server, { code: "x + 1", context_id: a.id });
      assert.deepEqual(got.results, [{ data: { "text/plain": "42" }, is_main_result: true }]);
      const other = await run(server, { code: "x", context_id: b.id });
      assert.equal(other.error.name, "NameError");
      const [status, restarted] = await post(server, {
        action: "restart_context",
        context_id: a.id,
      });
      assert.equal(status, 200);
      assert.ok(restarted.restarted_at);
      const after = await run(server, { code: "print(math.pi)", context_id: a.id });
      assert.equal(after.error.name, "NameError");
      assert.equal(after.exit_code, 1);
    });
    await t.step("typescript", async () => {
      const ctx = await create(server, { language: "typescript" });
      await run(server, { code: "const n: number = 6; let xs = [1, 2]", context_id: ctx.id });
      const got = await run(server, {
        code: "xs.push(n); console.log(xs.join(','))",
        context_id: ctx.id,
      });
      assert.equal(got.text, "1,2,6");
      const busy = await run(server, { code: "while (true) {}", context_id: ctx.id, timeout: 1 });
      assert.equal(busy.timed_out, true);
      assert.equal(busy.restarted, false, JSON.stringify(busy));
      assert.equal(
        (await run(server, { code: "xs.length", context_id: ctx.id })).results[0]
          .data["text/plain"],
        "3",
        "an interrupted busy loop leaves the kernel's state",
      );
      await post(server, { action: "restart_context", context_id: ctx.id });
      const after = await run(server, { code: "xs", context_id: ctx.id });
      assert.equal(after.error.name, "ReferenceError");
    });
    await t.step("the default context of a language keeps state", async () => {
      await run(server, { code: "y = 'kept'" });
      assert.equal((await run(server, { code: "print(y)" })).text, "kept");
      const listed = (await run(server, { action: "list_contexts" })).contexts;
      assert.equal(listed.filter((c: Json) => c.default && c.language === "python").length, 1);
    });
    await t.step("bash keeps variables and the working directory", async () => {
      await Deno.mkdir(`${server.root}/sub`);
      await run(server, { code: "cd sub; V=7", language: "bash" });
      const got = await run(server, { code: 'echo "$V $(basename "$PWD")"', language: "bash" });
      assert.equal(got.text, "7 sub");
      const read = await run(server, { code: 'read -r line; echo "read:$line"', language: "bash" });
      assert.equal(read.text, "read:", "stdin is empty, not the shell's own input");
      assert.equal(read.exit_code, 0);
    });
    await t.step("remove ends the kernel and its processes", async () => {
      const ctx = await create(server, { language: "python" });
      const child = await run(server, {
        code: "import subprocess\np = subprocess.Popen(['sleep', '300'])\nprint(p.pid)",
        context_id: ctx.id,
      });
      const sleeper = Number(child.text);
      const [status] = await post(server, { action: "remove_context", context_id: ctx.id });
      assert.equal(status, 200);
      assert.ok(!alive(ctx.pid), "the kernel is gone");
      // The sleeper was killed with the kernel's group; init reaps it.
      for (let i = 0; i < 100 && alive(sleeper); i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(!alive(sleeper), "the kernel's child is gone");
      const [gone, body] = await post(server, { code: "1", context_id: ctx.id });
      assert.equal(gone, 404);
      assert.equal(body.param, "context_id");
    });
  },
});

Deno.test({
  name: "run_code streams output as it happens, in order",
  ignore,
  async fn() {
    await using server = await startTestServer();
    const flag = `${server.root}/go`;
    // Up to three seconds of waiting: it ends early only once the test saw its first line.
    const code = `import os, time
print("started", flush=True)
for _ in range(300):
    if os.path.exists(${JSON.stringify(flag)}): break
    time.sleep(0.01)
print("finished", os.path.exists(${JSON.stringify(flag)}))`;
    const res = await server.fetch("/code/run", {
      method: "POST",
      body: JSON.stringify({ code, stream: true }),
      headers: { "content-type": "application/json" },
    });
    assert.equal(res.headers.get("content-type"), "application/x-ndjson");
    const lines = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = "";
    const next = async (): Promise<Json> => {
      while (!buffered.includes("\n")) {
        const { value, done } = await lines.read();
        if (done) throw new Error("the stream ended");
        buffered += value;
      }
      const at = buffered.indexOf("\n");
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      return JSON.parse(line);
    };
    assert.deepEqual(await next(), { type: "stdout", text: "started\n" });
    await Deno.writeTextFile(flag, "");
    assert.deepEqual(await next(), { type: "stdout", text: "finished True\n" });
    const end = await next();
    assert.equal(end.type, "end");
    assert.equal(end.stdout, "started\nfinished True\n");

    // A client that leaves mid-run stops its stream, not the run: the context carries on.
    const left = await server.fetch("/code/run", {
      method: "POST",
      body: JSON.stringify({
        code: "import time\nprint('going', flush=True)\ntime.sleep(0.3)\ndone = 'yes'",
        stream: true,
      }),
      headers: { "content-type": "application/json" },
    });
    const reader = left.body!.getReader();
    await reader.read();
    await reader.cancel();
    const after = await (await server.fetch("/code/run", {
      method: "POST",
      body: JSON.stringify({ code: "print(done)" }),
      headers: { "content-type": "application/json" },
    })).json();
    assert.equal(after.text, "yes");
  },
});

function pngSize(b64: string): [number, number] {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  assert.deepEqual([...bytes.slice(1, 4)], [0x50, 0x4e, 0x47]); // "PNG"
  assert.equal(new TextDecoder().decode(bytes.slice(12, 16)), "IHDR");
  const view = new DataView(bytes.buffer);
  return [view.getUint32(16), view.getUint32(20)];
}

Deno.test({
  name: "rich results: a matplotlib figure as PNG, a DataFrame as HTML, errors, outputs",
  ignore,
  async fn(t) {
    await using server = await startTestServer();
    const ctx = await create(server, { language: "python" });
    await t.step("a figure without savefig is a PNG of its size", async () => {
      const got = await run(server, {
        context_id: ctx.id,
        code: `%config InlineBackend.print_figure_kwargs = {"bbox_inches": None}
import matplotlib.pyplot as plt
fig = plt.figure(figsize=(4, 3), dpi=100)
plt.plot([1, 2, 3], [1, 4, 9])`,
      });
      const images = got.results.filter((r: Json) => r.data["image/png"]);
      assert.equal(images.length, 1, JSON.stringify(got));
      assert.equal(images[0].is_main_result, false);
      assert.deepEqual(pngSize(images[0].data["image/png"]), [400, 300]);
    });
    await t.step("a DataFrame is text/html", async () => {
      const got = await run(server, {
        context_id: ctx.id,
        code: "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})",
      });
      const main = got.results.find((r: Json) => r.is_main_result);
      assert.match(main.data["text/html"], /<table[^>]*class="dataframe"/);
      assert.match(main.data["text/plain"], /a\s+b/);
    });
    await t.step("an exception is an error with its traceback", async () => {
      const got = await run(server, {
        context_id: ctx.id,
        code: "def f():\n    return 1 / 0\nf()",
      });
      assert.equal(got.error.name, "ZeroDivisionError");
      assert.equal(got.error.value, "division by zero");
      const tb = got.error.traceback.join("\n");
      assert.match(tb, /return 1 \/ 0/);
      assert.ok(!tb.includes("\x1b["), "no terminal colours");
      assert.equal(got.exit_code, 1);
      assert.match(got.stderr, /ZeroDivisionError/);
    });
    await t.step("a timeout interrupts; the next run sees earlier variables", async () => {
      const set = await run(server, { context_id: ctx.id, code: "before = 'still here'" });
      assert.equal(set.exit_code, 0, `the assignment failed: ${JSON.stringify(set)}`);
      const slow = await run(server, {
        context_id: ctx.id,
        code: "import time\nwhile True: time.sleep(0.05)",
        timeout: 1,
      });
      assert.equal(slow.timed_out, true);
      assert.equal(slow.exit_code, 124);
      assert.equal(slow.error.name, "KeyboardInterrupt");
      assert.equal(slow.restarted, false);
      // On failure the whole answer is printed: once in many CI runs (never here in 37 runs,
      // 12 of them under load) the text came back empty, and the answer says why.
      const after = await run(server, { context_id: ctx.id, code: "print(before)" });
      assert.equal(after.text, "still here", JSON.stringify(after));
    });
    await t.step("a file written to outputs is in output_files", async () => {
      const got = await run(server, {
        context_id: ctx.id,
        code:
          "import os\nopen(os.path.join(os.environ['SANDBAR_OUTPUTS_DIR'], 'r.csv'), 'w').write('a,b\\n')",
      });
      assert.deepEqual(got.output_files, [{
        name: "r.csv",
        path: `${ctx.outputs_dir}/r.csv`,
        size: 4,
        mime_type: "text/csv",
      }]);
      const again = await run(server, { context_id: ctx.id, code: "1" });
      assert.deepEqual(again.output_files, [], "an unchanged file is not reported again");
    });
  },
});

Deno.test({
  name: "run_code guards and refusals for contexts",
  ignore,
  async fn() {
    await using server = await startTestServer({ policy: { params: { languages: ["python"] } } });
    const expect = async (body: unknown, status: number, code: string, param?: string) => {
      const [got, answer] = await post(server, body);
      assert.equal(got, status, JSON.stringify([body, answer]));
      // not_found is the one refusal without a code in its body: its type says it.
      if (code === "not_found") assert.equal(answer.type, "NotFoundError");
      else assert.equal(answer.code, code, JSON.stringify(answer));
      if (param) assert.equal(answer.param, param);
    };
    await expect({ action: "create_context", language: "bash" }, 403, "language_not_allowed");
    await expect({ action: "create_context", cwd: "/etc" }, 403, "path_not_allowed");
    await expect({ action: "create_context", env: { LD_PRELOAD: "x" } }, 403, "env_var_denied");
    await expect({ action: "restart_context" }, 400, "invalid_arguments", "context_id");
    await expect({ action: "list_contexts", code: "1" }, 400, "invalid_arguments", "code");
    await expect({ action: "drop" }, 400, "invalid_arguments", "action");
    await expect({ code: "1", context_id: "ctx_000000000000" }, 404, "not_found", "context_id");
    await expect({ code: "1", context_id: "../x" }, 400, "invalid_arguments", "context_id");
    const ctx = await create(server, { language: "python", env: { STAGE: "test" } });
    assert.deepEqual(ctx.env_keys, ["STAGE"]);
    await expect({ code: "1", context_id: ctx.id, cwd: "." }, 400, "invalid_arguments", "cwd");
    const got = await run(server, {
      code: "import os\nprint(os.environ['STAGE'], os.environ.get('RUN'))",
      context_id: ctx.id,
      env: { RUN: "1" },
    });
    assert.equal(got.text, "test 1");
    const later = await run(server, { code: "print(os.environ.get('RUN'))", context_id: ctx.id });
    assert.equal(later.text, "None", "a run's env is for that run only");
  },
});

Deno.test({
  name: "killing the server (SIGKILL) leaves no kernel process",
  ignore,
  async fn() {
    const server = await startTestServer({ args: ["--no-narrow"] });
    try {
      const pids: number[] = [];
      for (const language of ["python", "typescript", "bash"]) {
        pids.push((await create(server, { language })).pid);
      }
      const py = await run(server, {
        code: "import subprocess\nprint(subprocess.Popen(['sleep', '300']).pid)",
      });
      pids.push(Number(py.text));
      assert.ok(pids.every(alive));
      Deno.kill(server.pid, "SIGKILL");
      // Wait (bounded) for the bridge to see its stdin close and end every kernel group.
      for (let i = 0; i < 200 && pids.some(alive); i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.deepEqual(pids.filter(alive), [], "kernel processes outlived the server");
    } finally {
      await server.close();
    }
  },
});
