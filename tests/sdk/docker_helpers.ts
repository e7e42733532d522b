/**
 * The set-up the docker provider's test files share: on a test's first call, a sandbar home of
 * the file's own, the engine (`docker_engine.ts`) with the base image, a `DockerProvider` on it,
 * and `"docker"` registered so `Sandbox.create(…, { provider: "docker" })` reaches it; after the
 * file's tests, the provider's engine client closed and the engine stopped.
 */

import { DockerProvider, registerProvider } from "../../sdk/mod.ts";
import { ensureBaseImage, type TestEngine, testEngine } from "./docker_engine.ts";
import { useSandbarHome } from "./sandbox_helpers.ts";

/** What a docker test file works with. */
export interface DockerFixture {
  /** The running engine. */
  engine: TestEngine;
  /** The sandbar home the provider keeps its state under. */
  home: string;
  /** The provider, `"docker"` in the registry too. */
  provider: DockerProvider;
}

async function start(): Promise<DockerFixture> {
  const home = await useSandbarHome();
  const engine = await testEngine();
  try {
    await ensureBaseImage(engine);
  } catch (e) {
    await engine.stop();
    throw e;
  }
  const host = engine.host;
  registerProvider("docker", () => new DockerProvider({ host, home }));
  return { engine, home, provider: new DockerProvider({ host, home }) };
}

/**
 * Call once at a test file's top level: the function it returns sets everything up on its first
 * call (tests that are ignored start nothing) and hands the same fixture to every later one; the
 * file's `afterAll` takes it down.
 */
export function dockerFixture(): () => Promise<DockerFixture> {
  let ready: Promise<DockerFixture> | undefined;
  Deno.test.afterAll(async () => {
    const fixture = await ready?.catch(() => undefined);
    fixture?.provider.engine.close();
    await fixture?.engine.stop();
  });
  return () => ready ??= start();
}

/**
 * The volumes mounted in a sandbox's container, by name. Other docker test files share the engine
 * and run beside each other, so a test that checks volumes are gone checks these, not the
 * engine's whole list.
 */
export async function sandboxVolumes(provider: DockerProvider, id: string): Promise<string[]> {
  const found = await provider.engine.call<{ Mounts: { Type: string; Name?: string }[] }[]>(
    "GET",
    "/containers/json",
    { query: { all: true, filters: JSON.stringify({ label: [`sandbar.id=${id}`] }) } },
  );
  return found.flatMap((c) => c.Mounts.filter((m) => m.Type === "volume").map((m) => m.Name!));
}
