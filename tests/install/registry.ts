/**
 * A stand-in for the registry: serves this repository's publishable files over HTTP on loopback
 * as JSR serves a published package, at `http://127.0.0.1:<port>/@sandbar/sandbar/<version>/`,
 * and makes a separate project (a temporary directory with its own `deno.json`) whose import
 * map points `@sandbar/sandbar` and its exports at those URLs, the way `deno add` does.
 *
 * What JSR does that this does too: only the files `deno publish` takes (`publish.exclude`,
 * `exclude` and `.gitignore` applied), and bare specifiers rewritten to what the package's
 * import map resolves them to (`deno publish` "unfurls" `hono` to `npm:hono@4…`), so the
 * package needs no import map of the user's. A specifier left bare would make Deno refuse to
 * load the module, so a mistake here fails the tests rather than hiding.
 *
 * @module
 */

import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const CONFIG = JSON.parse(Deno.readTextFileSync(join(REPO, "deno.json")));
/** The package's version, as in `deno.json`. */
export const VERSION: string = CONFIG.version;

/** The files `deno publish` would upload, relative to the repository. */
export function publishableFiles(): string[] {
  const out = new Deno.Command("git", {
    args: ["ls-files", "--cached", "--others", "--exclude-standard"],
    cwd: REPO,
    stdout: "piped",
  }).outputSync();
  if (!out.success) throw new Error("git ls-files failed");
  const excluded = [...(CONFIG.exclude ?? []), ...(CONFIG.publish?.exclude ?? [])]
    .map((p: string) => p.replace(/^\.\//, ""));
  return new TextDecoder().decode(out.stdout).split("\n").filter((f) =>
    f !== "" && !excluded.some((e) => e.endsWith("/") ? f.startsWith(e) : f === e) &&
    !f.startsWith(".") && existsFile(join(REPO, f))
  );
}

function existsFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

const IMPORTS: Record<string, string> = CONFIG.imports ?? {};
const SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])([^"'\n]+)\2/g;

/** Rewrite bare specifiers as `deno publish` does, from the package's import map. */
export function unfurl(source: string): string {
  return source.replace(SPECIFIER, (whole, lead: string, quote: string, spec: string) => {
    if (/^[./]/.test(spec) || spec.includes(":")) return whole;
    let target = IMPORTS[spec];
    if (target === undefined) {
      const prefix = Object.keys(IMPORTS).filter((k) => k.endsWith("/") && spec.startsWith(k))
        .sort((a, b) => b.length - a.length)[0];
      if (prefix) target = IMPORTS[prefix] + spec.slice(prefix.length);
    }
    return target === undefined ? whole : `${lead}${quote}${target}${quote}`;
  });
}

const TYPES: Record<string, string> = {
  ".ts": "application/typescript; charset=utf-8",
  ".js": "application/javascript; charset=utf-8",
  ".json": "application/json",
  ".jsonc": "application/json",
  ".md": "text/markdown; charset=utf-8",
};

/** A package served on loopback. */
export interface ServedPackage {
  /** `http://127.0.0.1:<port>/@sandbar/sandbar/<version>/` */
  base: string;
  /** Paths asked for, in order (to show what was and was not fetched). */
  requested: string[];
  /** Stop serving. */
  close(): Promise<void>;
}

/** Serve the publishable files (unfurled) on a free loopback port. */
export function servePackage(): ServedPackage {
  const files = new Set(publishableFiles());
  const prefix = `/@sandbar/sandbar/${VERSION}/`;
  const requested: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = decodeURIComponent(new URL(req.url).pathname);
    requested.push(path);
    const file = path.startsWith(prefix) ? path.slice(prefix.length) : "";
    if (req.method !== "GET" || !files.has(file)) return new Response("not found", { status: 404 });
    const text = await Deno.readTextFile(join(REPO, file));
    const type = TYPES[extname(file)] ?? "application/octet-stream";
    const body = extname(file) === ".ts" ? unfurl(text) : text;
    return new Response(body, { headers: { "content-type": type } });
  });
  return {
    base: `http://127.0.0.1:${server.addr.port}${prefix}`,
    requested,
    close: () => server.shutdown(),
  };
}

/** A separate project that depends on the served package. */
export interface UserProject {
  /** Its directory. */
  dir: string;
  /** Its own Deno cache (a machine that has never run sandbar). */
  denoDir: string;
  /** Its own sandbox home. */
  sandbarHome: string;
  /** `deno run -A <args>` in the project; stdout, stderr and the exit code. */
  run(args: string[], env?: Record<string, string>): Promise<RunResult>;
  /** Remove it. */
  remove(): Promise<void>;
}

/** What a run printed. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * A temporary project whose import map has `@sandbar/sandbar` (and each export, as
 * `@sandbar/sandbar/<name>`) at the served package's URLs.
 */
export async function userProject(pkg: ServedPackage, denoDir: string): Promise<UserProject> {
  const dir = await Deno.makeTempDir({ prefix: "sandbar-user-" });
  const sandbarHome = join(dir, ".sandbar");
  const imports: Record<string, string> = {};
  for (const [name, path] of Object.entries(CONFIG.exports as Record<string, string>)) {
    const key = name === "." ? "@sandbar/sandbar" : `@sandbar/sandbar/${name.slice(2)}`;
    imports[key] = new URL(path.replace(/^\.\//, ""), pkg.base).href;
  }
  await Deno.writeTextFile(join(dir, "deno.json"), JSON.stringify({ imports }, null, 2));
  const run = async (args: string[], env: Record<string, string> = {}) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", ...args],
      cwd: dir,
      env: { DENO_DIR: denoDir, SANDBAR_HOME: sandbarHome, NO_COLOR: "1", ...env },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder();
    return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
  };
  return {
    dir,
    denoDir,
    sandbarHome,
    run,
    remove: () => Deno.remove(dir, { recursive: true }).catch(() => {}),
  };
}
