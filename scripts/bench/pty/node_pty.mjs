// The @lydell/node-pty side of scripts/bench/pty.ts, under Node. Same shell, same keystrokes,
// same output as the Deno side; prints one JSON line.
//
//   node node_pty.mjs echo <keystrokes>      -> {"samples_ms":[...]}
//   node node_pty.mjs throughput <bytes>     -> {"bytes":N,"ms":T}
//
// BENCH_NODE_MODULES points at the scratch install (.tmp/bench-pty/node_modules).
import { createRequire } from "node:module";

const require = createRequire(`${process.env.BENCH_NODE_MODULES}/`);
const pty = require("@lydell/node-pty");
const [mode, countArg] = process.argv.slice(2);
const count = Number(countArg);
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", TERM: "xterm-256color", PS1: "$ " };

function echo(n) {
  const term = pty.spawn("/bin/bash", ["--norc", "--noprofile"], { cols: 80, rows: 24, env });
  const samples = [];
  let seen = "";
  let want = null;
  let sentAt = 0;
  let i = -1;
  const next = () => {
    i++;
    if (i === n) {
      term.kill("SIGKILL");
      console.log(JSON.stringify({ samples_ms: samples }));
      return;
    }
    // Alternate a printable key and Backspace so the line never grows.
    const key = i % 2 === 0 ? "x" : "\x7f";
    want = i % 2 === 0 ? "x" : "\b";
    seen = "";
    sentAt = performance.now();
    term.write(key);
  };
  let started = false;
  term.onData((d) => {
    if (!started) {
      if (d.includes("$ ")) {
        started = true;
        setTimeout(next, 50);
      }
      return;
    }
    if (want === null) return;
    seen += d;
    if (seen.includes(want)) {
      samples.push(performance.now() - sentAt);
      want = null;
      next();
    }
  });
}

function throughput(bytes) {
  const script =
    `read go; yes 0123456789012345678901234567890123456789012345678901234567890123456789 | head -c ${bytes}`;
  const term = pty.spawn("/bin/sh", ["-c", script], { cols: 80, rows: 24, env });
  let got = 0;
  let started = 0;
  term.onData((d) => {
    got += Buffer.byteLength(d, "latin1");
  });
  term.onExit(() => {
    // onExit may come before the last data events; let them land.
    setTimeout(() => {
      console.log(JSON.stringify({ bytes: got, ms: performance.now() - started }));
    }, 0);
  });
  setTimeout(() => {
    got = 0;
    started = performance.now();
    term.write("\r");
  }, 100);
}

if (mode === "echo") echo(count);
else if (mode === "throughput") throughput(count);
else {
  console.error("usage: node node_pty.mjs echo N | throughput BYTES");
  process.exit(2);
}
