/**
 * The floor of any run through a Jupyter kernel: `print(1)` sent by `jupyter_client` itself to
 * an ipykernel started the way the server starts it (`kernelLaunch`), waited for until the kernel is idle and has
 * replied, driven over a pipe from this process (one line in, one line out, as the server's
 * bridge is). Nothing of sandbar's runs in it, so `code.ts` prints it as what bounds the warm
 * context.
 *
 * @module
 */

import { kernelLaunch } from "../../server/code/languages.ts";

const DRIVER = `
import sys
from jupyter_client.manager import KernelManager
km = KernelManager(kernel_cmd=sys.argv[1:])
km.start_kernel(env=dict(__import__("os").environ))
kc = km.client()
kc.start_channels()
kc.wait_for_ready(timeout=60)
def run():
    mid = kc.execute("print(1)", store_history=True, allow_stdin=False)
    while True:
        m = kc.get_iopub_msg(timeout=30)
        if (m["parent_header"].get("msg_id") == mid and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"):
            break
    while kc.get_shell_msg(timeout=30)["parent_header"].get("msg_id") != mid:
        pass
sys.stdout.write("ready\\n"); sys.stdout.flush()
try:
    for line in sys.stdin:
        run()
        sys.stdout.write("ok\\n"); sys.stdout.flush()
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
`;

/** A kernel driven by `jupyter_client` alone; `run()` is one `print(1)`. */
export interface JupyterFloor extends AsyncDisposable {
  /** Run `print(1)` once and wait for its end. */
  run(): Promise<void>;
}

/** Start the driver with `python`, and its kernel as the server starts a Python context's. */
export async function startJupyterFloor(python: string): Promise<JupyterFloor> {
  const kernel = await kernelLaunch("python", {});
  const child = new Deno.Command(python, {
    args: ["-c", DRIVER, ...kernel.argv!],
    env: kernel.env,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const writer = child.stdin.getWriter();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const nextLine = async () => {
    while (!buffered.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) throw new Error("the jupyter_client driver ended");
      buffered += value;
    }
    const nl = buffered.indexOf("\n");
    const line = buffered.slice(0, nl);
    buffered = buffered.slice(nl + 1);
    return line;
  };
  if (await nextLine() !== "ready") throw new Error("the jupyter_client driver did not start");
  const go = new TextEncoder().encode("run\n");
  return {
    async run() {
      await writer.write(go);
      if (await nextLine() !== "ok") throw new Error("the jupyter_client driver failed");
    },
    async [Symbol.asyncDispose]() {
      await writer.close().catch(() => {});
      await child.status;
    },
  };
}
