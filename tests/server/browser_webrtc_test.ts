/**
 * No UDP leaves the browser: an allowed page used to reach any address through WebRTC (a STUN
 * server at `stun:127.0.0.1:<port>` got binding requests) despite Chromium's WebRTC
 * IP-handling flag. With real Chromium, a page tries STUN and TURN-over-UDP to sockets this
 * test listens on (loopback); nothing may arrive, and Chromium's processes run under the
 * seccomp filter that refuses UDP sockets.
 */

import assert from "node:assert/strict";
import dgram from "node:dgram";
import { startTestServer, type TestServer } from "../helpers/server.ts";

const haveChromium = ["/usr/lib/chromium/chromium", "/usr/bin/chromium"].some((p) => {
  try {
    return Deno.statSync(p).isFile;
  } catch {
    return false;
  }
});

/** A UDP socket on loopback that counts what it receives. */
async function udpListener(type: "udp4" | "udp6", address: string) {
  const socket = dgram.createSocket(type);
  const received: string[] = [];
  socket.on("message", (msg, from) => received.push(`${from.address}:${from.port} ${msg.length}`));
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.bind(0, address, () => resolve());
  });
  return {
    port: socket.address().port,
    received,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

async function post(server: TestServer, path: string, body: unknown) {
  const res = await server.fetch(path, { method: "POST", body: JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

/** A page script: one peer connection per ICE server, the candidates it gathered. */
function iceScript(urls: string[]): string {
  return `(async () => {
    const out = [];
    for (const u of ${JSON.stringify(urls)}) {
      try {
        const pc = new RTCPeerConnection({ iceServers: [{ urls: u, username: "u", credential: "c" }] });
        pc.createDataChannel("x");
        const done = new Promise((r) => {
          pc.onicecandidate = (e) => { if (e.candidate) out.push(e.candidate.candidate); else r(); };
          setTimeout(r, 4000);
        });
        await pc.setLocalDescription(await pc.createOffer());
        await done;
        pc.close();
      } catch (e) { out.push("error " + e); }
    }
    return out;
  })()`;
}

function seccompOf(pid: number): string | undefined {
  try {
    return /^Seccomp:\s*(\d)/m.exec(Deno.readTextFileSync(`/proc/${pid}/status`))?.[1];
  } catch {
    return undefined;
  }
}

/** Chromium processes (their command line names a profile) below `root`. */
function chromiumBelow(root: number): number[] {
  const parent = (pid: number) => {
    try {
      const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    } catch {
      return 0;
    }
  };
  const out: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    const pid = Number(e.name);
    if (!Number.isInteger(pid)) continue;
    let cmd = "";
    try {
      cmd = Deno.readTextFileSync(`/proc/${pid}/cmdline`);
    } catch {
      continue;
    }
    if (!cmd.includes("--user-data-dir=")) continue;
    for (let p = pid, depth = 0; p > 1 && depth < 20; p = parent(p), depth++) {
      if (p === root) {
        out.push(pid);
        break;
      }
    }
  }
  return out;
}

Deno.test({
  name: "browser: a page cannot send UDP through WebRTC (STUN, TURN over UDP)",
  ignore: !haveChromium, // Chromium is not installed
  async fn() {
    const site = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () =>
        new Response("<!doctype html><title>rtc</title>", {
          headers: { "content-type": "text/html" },
        }),
    );
    const v4 = await udpListener("udp4", "127.0.0.1");
    const v6 = await udpListener("udp6", "::1").catch(() => null);
    const server = await startTestServer({
      policy: { endpoints: { browser: true }, url_allow: [`http://127.0.0.1:${site.addr.port}`] },
    });
    try {
      const nav = await post(server, "/browser/navigate", {
        url: `http://127.0.0.1:${site.addr.port}/`,
      });
      assert.equal(nav.status, 200, JSON.stringify(nav.json));
      const urls = [
        `stun:127.0.0.1:${v4.port}`,
        `turn:127.0.0.1:${v4.port}?transport=udp`,
        ...(v6 ? [`stun:[::1]:${v6.port}`] : []),
      ];
      const r = await post(server, "/browser/evaluate", {
        script: iceScript(urls),
        timeout_ms: 30_000,
      });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      // No host, server-reflexive or relay candidate over UDP: no UDP socket could be made.
      const candidates = r.json.result as string[];
      assert.ok(Array.isArray(candidates), JSON.stringify(r.json));
      assert.deepEqual(candidates.filter((c) => / udp /i.test(c)), []);
      // And nothing arrived: the ICE gathering above has ended or timed out.
      assert.deepEqual(v4.received, []);
      assert.deepEqual(v6?.received ?? [], []);
      // Every Chromium process runs under a seccomp filter (2: filter mode).
      const pids = chromiumBelow(server.pid);
      assert.ok(pids.length > 0, "no Chromium process found");
      for (const pid of pids) assert.equal(seccompOf(pid), "2", `pid ${pid}`);
      // The page itself still works.
      const title = await post(server, "/browser/evaluate", { script: "document.title" });
      assert.equal(title.json.result, "rtc");
    } finally {
      await server.close();
      await v4.close();
      await v6?.close();
      await site.shutdown();
    }
  },
});
