/**
 * file_ops benchmarks, each against a baseline measured in the same run, on loopback:
 *
 * 1. Download throughput through the server (`GET /files`) against reading the same file from
 *    disk in this process (goal: ratio at least 0.8), with the file dropped from the page cache
 *    before every read (so both come from the disk), and again warm (both from memory). The
 *    download is measured with curl, as wrk measures requests per second: a native client that
 *    is not itself the bound. Deno's `fetch` (what the SDK uses) is printed beside it; it tops
 *    out near 1.1-1.4 GB/s on loopback whatever the server. The disk baseline is this process
 *    reading the file with the fastest of three buffer sizes, so the baseline is not weakened.
 * 2. A 1 GiB streamed upload (`POST /files`): growth of the real server process's resident
 *    memory (goal: under 64 MiB), read from `/proc/<pid>/status` while it runs.
 * 3. Listing a directory of 10,000 entries (`GET /files/list`, every entry described) against
 *    `Deno.readDir` of the same directory (names only) and `Deno.readDir` plus `lstat` per
 *    entry (what a listing with metadata needs).
 *
 * Run: `deno run -A scripts/bench/files.ts`. Medians of several runs are printed.
 *
 * @module
 */

import { startTestServer } from "../../tests/helpers/server.ts";
import { have } from "./load.ts";

const MiB = 1024 * 1024;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

async function drain(stream: ReadableStream<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const chunk of stream) n += chunk.byteLength;
  return n;
}

async function readFromDisk(path: string, bufferBytes: number): Promise<number> {
  using file = await Deno.open(path);
  const buf = new Uint8Array(bufferBytes);
  let n = 0;
  while (true) {
    const got = await file.read(buf);
    if (got === null) return n;
    n += got;
  }
}

/** Download with curl to /dev/null: bytes and seconds of the transfer (curl's own clock). */
async function curlDownload(url: string, token: string): Promise<[number, number]> {
  const out = await new Deno.Command("curl", {
    args: [
      "-sS",
      "-o",
      "/dev/null",
      "-H",
      `authorization: Bearer ${token}`,
      "-w",
      "%{size_download} %{time_total}",
      url,
    ],
    stdout: "piped",
  }).output();
  if (!out.success) throw new Error(`curl failed: ${new TextDecoder().decode(out.stderr)}`);
  const [bytes, seconds] = new TextDecoder().decode(out.stdout).trim().split(" ").map(Number);
  return [bytes, seconds];
}

async function residentBytes(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kb = Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1] ?? 0);
  return kb * 1024;
}

async function childOf(pid: number): Promise<number> {
  for (let i = 0; i < 200; i++) {
    for await (const task of Deno.readDir(`/proc/${pid}/task`)) {
      const kids = (await Deno.readTextFile(`/proc/${pid}/task/${task.name}/children`)).trim();
      if (kids) return Number(kids.split(/\s+/)[0]);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("the server's child process did not appear");
}

/**
 * Drop a file's pages from the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)`), so the next
 * read comes from the disk, for the baseline and the server alike.
 */
function dropFromPageCache(path: string): void {
  const libc = Deno.dlopen("libc.so.6", {
    open: { parameters: ["buffer", "i32"], result: "i32" },
    posix_fadvise: { parameters: ["i32", "i64", "i64", "i32"], result: "i32" },
    close: { parameters: ["i32"], result: "i32" },
  });
  try {
    const fd = libc.symbols.open(new TextEncoder().encode(`${path}\0`), 0);
    if (fd < 0) throw new Error(`open ${path} failed`);
    libc.symbols.posix_fadvise(fd, 0n, 0n, 4 /* POSIX_FADV_DONTNEED */);
    libc.symbols.close(fd);
  } finally {
    libc.close();
  }
}

/** A body of `total` bytes in 1 MiB chunks, made as it is read. */
function generatedBody(total: number): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(MiB);
  crypto.getRandomValues(chunk.subarray(0, 65536));
  for (let i = 65536; i < MiB; i += 65536) chunk.copyWithin(i, 0, 65536);
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) return controller.close();
      const n = Math.min(MiB, total - sent);
      sent += n;
      controller.enqueue(chunk.slice(0, n));
    },
  });
}

/** Run the benchmarks and print the results. */
export async function main(): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "sandbar-bench-files-" });
  try {
    await using server = await startTestServer({ root });
    const pid = await childOf(server.pid);

    // 1. Download throughput.
    const size = 256 * MiB;
    {
      using file = await Deno.open(`${root}/big.bin`, { write: true, create: true });
      const chunk = new Uint8Array(MiB);
      for (let i = 0; i < size / MiB; i++) {
        crypto.getRandomValues(chunk.subarray(0, 65536));
        await file.write(chunk);
      }
      await file.sync(); // Dirty pages cannot be dropped from the cache; clean ones can.
    }
    const path = `${root}/big.bin`;
    const curl = await have("curl");
    const measure = async (cold: boolean) => {
      const disk: number[] = [];
      const http: number[] = [];
      const sdk: number[] = [];
      const rate = (bytes: number, seconds: number) => bytes / MiB / seconds;
      await readFromDisk(path, MiB);
      for (let run = 0; run < (cold ? 3 : 5); run++) {
        let best = 0;
        for (const bufferBytes of [256 * 1024, 512 * 1024, MiB]) {
          if (cold) dropFromPageCache(path);
          const t = performance.now();
          const a = await readFromDisk(path, bufferBytes);
          if (a !== size) throw new Error(`short read from disk: ${a}`);
          best = Math.max(best, rate(a, (performance.now() - t) / 1000));
        }
        disk.push(best);
        if (curl) {
          if (cold) dropFromPageCache(path);
          const [b, seconds] = await curlDownload(`${server.url}/files?path=big.bin`, server.token);
          if (b !== size) throw new Error(`short download: ${b}`);
          http.push(rate(b, seconds));
        }
        if (cold) dropFromPageCache(path);
        const t = performance.now();
        const res = await server.fetch("/files?path=big.bin");
        const c = await drain(res.body!);
        if (c !== size) throw new Error(`short download: ${c}`);
        sdk.push(rate(c, (performance.now() - t) / 1000));
      }
      const [d, h, f] = [median(disk), median(http), median(sdk)];
      const label = cold ? "cold (from the disk)" : "warm (page cache)";
      console.log(
        `download 256 MiB, ${label}: disk ${d.toFixed(0)} MiB/s, server ${
          curl ? `${h.toFixed(0)} MiB/s (curl), ratio ${(h / d).toFixed(2)}` : "(no curl)"
        }${cold ? " (goal >= 0.8)" : ""}; Deno fetch ${f.toFixed(0)} MiB/s, ratio ${
          (f / d).toFixed(2)
        }`,
      );
    };
    await measure(true);
    await measure(false);
    await Deno.remove(`${root}/big.bin`);

    // 2. A 1 GiB upload's resident memory.
    const before = await residentBytes(pid);
    let peak = before;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await residentBytes(pid));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const upStart = performance.now();
    const up = await server.fetch("/files?path=upload.bin", {
      method: "POST",
      body: generatedBody(1024 * MiB),
    });
    const upSeconds = (performance.now() - upStart) / 1000;
    sampling = false;
    await sampler;
    if (up.status !== 200) throw new Error(`upload failed: ${up.status} ${await up.text()}`);
    await up.body?.cancel();
    const written = (await Deno.stat(`${root}/upload.bin`)).size;
    if (written !== 1024 * MiB) throw new Error(`upload wrote ${written} bytes`);
    const growth = (peak - before) / MiB;
    console.log(
      `upload 1 GiB: ${(1024 / upSeconds).toFixed(0)} MiB/s; server RSS ${
        (before / MiB).toFixed(0)
      } -> peak ${(peak / MiB).toFixed(0)} MiB, growth ${growth.toFixed(1)} MiB (goal < 64)`,
    );
    await Deno.remove(`${root}/upload.bin`);

    // 3. Listing 10,000 entries.
    await Deno.mkdir(`${root}/many`);
    for (let i = 0; i < 10_000; i++) {
      await Deno.writeFile(
        `${root}/many/file-${String(i).padStart(5, "0")}.txt`,
        new Uint8Array(1),
      );
    }
    const names: number[] = [];
    const withStat: number[] = [];
    const served: number[] = [];
    for (let run = 0; run < 7; run++) {
      let t = performance.now();
      let n = 0;
      for await (const _ of Deno.readDir(`${root}/many`)) n++;
      names.push(performance.now() - t);
      t = performance.now();
      for await (const e of Deno.readDir(`${root}/many`)) {
        await Deno.lstat(`${root}/many/${e.name}`);
      }
      withStat.push(performance.now() - t);
      t = performance.now();
      const body = await (await server.fetch("/files/list?path=many")).json();
      served.push(performance.now() - t);
      if (n !== 10_000 || body.entries.length !== 10_000) {
        throw new Error(`listed ${n} and ${body.entries.length}`);
      }
    }
    const [a, b, c] = [median(names), median(withStat), median(served)];
    console.log(
      `list 10,000 entries: readDir ${a.toFixed(1)} ms, readDir+lstat ${b.toFixed(1)} ms, ` +
        `server ${c.toFixed(1)} ms; ratio server/readDir ${(c / a).toFixed(1)}, ` +
        `server/(readDir+lstat) ${(c / b).toFixed(2)}`,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

if (import.meta.main) await main();
