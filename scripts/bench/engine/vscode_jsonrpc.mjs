// The baseline: the same covers round trip with vscode-jsonrpc over stdio under Node.
// `node vscode_jsonrpc.mjs client N INFLIGHT WARMUP` spawns itself as the server and prints req/s.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
const require = createRequire(process.env.BENCH_NODE_MODULES + "/");
const rpc = require("vscode-jsonrpc/node");

const [role, total, inflight, warmup = "500"] = process.argv.slice(2);
if (role === "server") {
  const connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(process.stdin),
    new rpc.StreamMessageWriter(process.stdout),
  );
  connection.onRequest("covers", () => ({ covers: true }));
  connection.listen();
  process.stdin.on("end", () => process.exit(0));
} else {
  const child = spawn(process.execPath, [new URL(import.meta.url).pathname, "server"], {
    stdio: ["pipe", "pipe", "inherit"],
    env: process.env,
  });
  const connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(child.stdout),
    new rpc.StreamMessageWriter(child.stdin),
  );
  connection.listen();
  const params = JSON.parse(process.env.BENCH_PARAMS);
  const window = async (n, width) => {
    let next = 0;
    const lane = async () => {
      while (next < n) {
        next++;
        await connection.sendRequest("covers", params);
      }
    };
    await Promise.all(Array.from({ length: width }, lane));
  };
  await window(Number(warmup), Number(inflight));
  const started = performance.now();
  await window(Number(total), Number(inflight));
  const seconds = (performance.now() - started) / 1000;
  console.log(JSON.stringify({ rps: Number(total) / seconds }));
  connection.dispose();
  child.stdin.end();
}
