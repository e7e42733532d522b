/**
 * A Python package index of one package for the tests that install through the egress proxy:
 * `sandbar-egress-probe` 1.0, a one-module wheel (`VALUE = 'installed through the proxy'`)
 * built with Python's zipfile, served in the "simple" form pip reads on `hostname`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";

/** A one-module wheel, built with Python's zipfile (a wheel is a zip with its metadata). */
async function buildWheel(dir: string): Promise<string> {
  const file = "sandbar_egress_probe-1.0-py3-none-any.whl";
  const script = `
import base64, hashlib, sys, zipfile
n, v = "sandbar_egress_probe", "1.0"
files = {
  f"{n}/__init__.py": "VALUE = 'installed through the proxy'\\n",
  f"{n}-{v}.dist-info/METADATA": f"Metadata-Version: 2.1\\nName: sandbar-egress-probe\\nVersion: {v}\\n",
  f"{n}-{v}.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
record = []
with zipfile.ZipFile(sys.argv[1], "w") as z:
  for path, text in files.items():
    data = text.encode()
    z.writestr(path, data)
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{path},sha256={digest},{len(data)}")
  record.append(f"{n}-{v}.dist-info/RECORD,,")
  z.writestr(f"{n}-{v}.dist-info/RECORD", "\\n".join(record) + "\\n")
`;
  const out = await new Deno.Command("/usr/bin/python3", {
    args: ["-c", script, join(dir, file)],
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return file;
}

/** A running index: `url` is its `/simple/` root for `--index-url` or `PIP_INDEX_URL`. */
export interface PackageIndex {
  /** `http://<hostname>:<port>/simple/`. */
  url: string;
  /** Stop it and remove its files. */
  close(): Promise<void>;
}

/** Serve the index on `hostname` (a free port). */
export async function startPackageIndex(hostname: string): Promise<PackageIndex> {
  const dir = await Deno.makeTempDir({ prefix: "sandbar-egress-pypi-" });
  const wheel = await buildWheel(dir);
  const server = Deno.serve({ hostname, port: 0, onListen: () => {} }, async (req) => {
    const path = new URL(req.url).pathname;
    if (/^\/simple\/sandbar-egress-probe\/?$/.test(path)) {
      return new Response(`<html><body><a href="/files/${wheel}">${wheel}</a></body></html>`, {
        headers: { "content-type": "text/html" },
      });
    }
    if (path === `/files/${wheel}`) return new Response(await Deno.readFile(join(dir, wheel)));
    return new Response("not found", { status: 404 });
  });
  return {
    url: `http://${hostname}:${server.addr.port}/simple/`,
    close: async () => {
      await server.shutdown();
      await Deno.remove(dir, { recursive: true });
    },
  };
}
