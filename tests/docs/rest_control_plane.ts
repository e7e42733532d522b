/**
 * A small E2B-shaped REST control plane for the `RestProvider` sketch of docs/sdk/sandbox.md:
 * its sandboxes are real local sandboxes (`LocalProvider`), each reached through its own port
 * gateway in the path form (`/_port/<port>`). It records the calls it answered.
 *
 * @module
 */

import { timingSafeEqual } from "node:crypto";
import {
  LocalProvider,
  type SandboxHandle,
  SandboxNotFoundError,
  type SandboxStatus,
} from "../../sdk/mod.ts";

/** A running control plane. */
export interface ControlPlane extends AsyncDisposable {
  /** Its base URL. */
  url: string;
  /** The API key it accepts. */
  apiKey: string;
  /** `METHOD /path` of each call it answered, in order. */
  calls: string[];
  /** The local provider behind it. */
  provider: LocalProvider;
}

function remote(h: SandboxHandle) {
  if (!h.portAddress) throw new Error("a local sandbox always has a data plane");
  const gateway = new URL(h.portAddress(9000).url);
  return {
    sandboxID: h.info.sandboxId,
    templateID: h.info.template,
    state: h.info.status,
    startedAt: h.info.startedAt?.toISOString(),
    endAt: h.info.endAt?.toISOString(),
    metadata: h.info.metadata,
    envdAccessToken: h.info.envdAccessToken,
    domain: h.domain,
    capabilities: h.capabilities,
    serverToken: h.serverToken,
    portUrl: `http://${gateway.host}/_port/{port}`,
  };
}

/** Start one on a free loopback port, its sandboxes under `home`. */
export function startControlPlane(home: string): ControlPlane {
  const provider = new LocalProvider({ home });
  const apiKey = crypto.randomUUID();
  const calls: string[] = [];
  const enc = new TextEncoder();
  const keyOk = (given: string | null) => {
    const a = enc.encode(given ?? "");
    const b = enc.encode(apiKey);
    return a.length === b.length && timingSafeEqual(a, b);
  };
  const json = (body: unknown, status = 200) => Response.json(body, { status });

  async function answer(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const body = req.method === "POST" ? await req.text() : "";
    const input = body === "" ? {} : JSON.parse(body);
    const one = /^\/sandboxes\/([a-z0-9]+)(\/timeout|\/pause|\/resume)?$/.exec(url.pathname);
    if (req.method === "POST" && url.pathname === "/sandboxes") {
      return json(
        remote(
          await provider.create({
            template: input.templateID,
            timeout: input.timeout,
            metadata: input.metadata ?? {},
            envs: input.envVars ?? {},
            secure: true,
          }),
        ),
        201,
      );
    }
    if (req.method === "GET" && url.pathname === "/v2/sandboxes") {
      const infos = await provider.list({
        limit: Number(url.searchParams.get("limit") ?? 100),
        offset: Number(url.searchParams.get("offset") ?? 0),
        status: (url.searchParams.get("state") ?? undefined) as SandboxStatus | undefined,
      });
      return json(
        await Promise.all(infos.map(async (i) => remote(await provider.connect(i.sandboxId)))),
      );
    }
    if (!one) return json({ message: `no route ${req.method} ${url.pathname}` }, 404);
    const [, id, action] = one;
    if (req.method === "GET" && !action) return json(remote(await provider.connect(id)));
    if (req.method === "DELETE" && !action) {
      return (await provider.kill(id)) ? new Response(null, { status: 204 }) : json({}, 404);
    }
    if (req.method !== "POST") return json({ message: "method not allowed" }, 405);
    if (action === "/timeout") await provider.setTimeout(id, input.timeout);
    if (action === "/pause") await provider.pause(id);
    if (action === "/resume") await provider.resume(id);
    return new Response(null, { status: 204 });
  }

  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    if (!keyOk(req.headers.get("x-api-key"))) return json({ message: "bad API key" }, 401);
    calls.push(`${req.method} ${new URL(req.url).pathname}`);
    try {
      return await answer(req);
    } catch (e) {
      if (e instanceof SandboxNotFoundError) return json({ message: e.message }, 404);
      return json({ message: String(e) }, 500);
    }
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    apiKey,
    calls,
    provider,
    async [Symbol.asyncDispose]() {
      for (const info of await provider.list({ limit: 100, offset: 0 })) {
        await provider.kill(info.sandboxId);
      }
      await server.shutdown();
    },
  };
}
