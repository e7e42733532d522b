/**
 * Templates built from a Dockerfile through the engine's build API: the context (a directory on
 * disk, files given in code, or both) goes to the engine as a tar stream, the build runs with no
 * network (`networkmode=none`: install from files in the context or the base image), and its
 * output is handed to `onLog` line by line as it builds. The result is a local image that
 * `Sandbox.create(name, { provider: "docker" })` takes by name.
 *
 * @module
 */

import { join, relative } from "node:path";
import { SandboxError, ValidationError } from "../../errors/mod.ts";
import { Engine, engineAddress } from "./engine.ts";
import { tarArchive, type TarEntry } from "./tar.ts";

/** Options of {@linkcode buildTemplate}. */
export interface BuildTemplateOptions {
  /** The template's (image's) name, `name[:tag]`. */
  name: string;
  /** The Dockerfile's text (default: `Dockerfile` in the context). */
  dockerfile?: string;
  /** A directory sent as the build context. */
  context?: string;
  /** Files added to the context, by relative path. */
  files?: Record<string, string | Uint8Array>;
  /** Each line of the build's output, as it comes. */
  onLog?: (line: string) => void;
  /** The engine (default `DOCKER_HOST`, else the usual socket). */
  host?: string;
}

async function walk(dir: string, root: string, out: TarEntry[]): Promise<void> {
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    const name = relative(root, path);
    if (e.isDirectory) {
      out.push({ name: `${name}/` });
      await walk(path, root, out);
    } else if (e.isFile) {
      const info = await Deno.stat(path);
      out.push({ name, data: await Deno.readFile(path), mode: (info.mode ?? 0o644) & 0o777 });
    }
  }
}

/**
 * Build a template from a Dockerfile; resolves to the image's name once built.
 *
 * @example
 * ```ts ignore
 * import { buildTemplate, Sandbox } from "@sandbar/sandbar";
 * await buildTemplate({
 *   name: "my-tools",
 *   dockerfile: "FROM debian:bookworm\nCOPY hello.deb /tmp/\nRUN dpkg -i /tmp/hello.deb\n",
 *   files: { "hello.deb": await Deno.readFile("hello.deb") },
 *   onLog: (line) => console.log(line),
 * });
 * await using sandbox = await Sandbox.create("my-tools", { provider: "docker" });
 * ```
 */
export async function buildTemplate(options: BuildTemplateOptions): Promise<string> {
  const known = ["name", "dockerfile", "context", "files", "onLog", "host"];
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new ValidationError(`buildTemplate: unknown option ${key}`, {
        suggestion: `Known: ${known.join(", ")}`,
      });
    }
  }
  if (!/^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_.-]{1,128})?$/.test(options.name ?? "")) {
    throw new ValidationError(`buildTemplate: name "${options.name}" is not an image name`);
  }
  const entries: TarEntry[] = [];
  if (options.context) await walk(options.context, options.context, entries);
  const encoder = new TextEncoder();
  for (const [name, data] of Object.entries(options.files ?? {})) {
    if (name.startsWith("/") || name.split("/").includes("..")) {
      throw new ValidationError(`buildTemplate: files: "${name}" must be a relative path`);
    }
    entries.push({ name, data: typeof data === "string" ? encoder.encode(data) : data });
  }
  let dockerfile = "Dockerfile";
  if (options.dockerfile !== undefined) {
    dockerfile = ".sandbar.Dockerfile";
    entries.push({ name: dockerfile, data: encoder.encode(options.dockerfile) });
  } else if (!entries.some((e) => e.name === "Dockerfile")) {
    throw new ValidationError(
      "buildTemplate: no Dockerfile (give `dockerfile`, or a context " +
        "that has one)",
    );
  }
  const host = options.host ?? Deno.env.get("DOCKER_HOST") ?? "unix:///var/run/docker.sock";
  const engine = new Engine(engineAddress(host));
  try {
    const res = await engine.fetch("POST", "/build", {
      query: { t: options.name, dockerfile, rm: true, forcerm: true, networkmode: "none" },
      body: tarArchive(entries),
    });
    const decoder = new TextDecoder();
    let pending = "";
    let failure: string | null = null;
    const handle = (line: string) => {
      if (!line.trim()) return;
      const event = JSON.parse(line);
      if (event.error) failure = event.error;
      const text: string | undefined = event.stream ?? event.status ?? event.error;
      if (text) { for (const l of text.replace(/\n$/, "").split("\n")) options.onLog?.(l); }
    };
    for await (const chunk of res.body!) {
      pending += decoder.decode(chunk, { stream: true });
      let at: number;
      while ((at = pending.indexOf("\n")) >= 0) {
        handle(pending.slice(0, at));
        pending = pending.slice(at + 1);
      }
    }
    handle(pending);
    if (failure) throw new SandboxError(`The build of ${options.name} failed: ${failure}`);
    return options.name.includes(":") ? options.name : `${options.name}:latest`;
  } finally {
    engine.close();
  }
}
