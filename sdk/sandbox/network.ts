/**
 * The `network` module: the addresses of the sandbox's ports. Local computation only, no
 * request. Associated with the `ports` capability.
 *
 * A port opened inside the sandbox is reached at `getUrl(port)`, `{scheme}://{port}-{id}.{domain}`.
 * Under the local provider the domain is `localhost:<gateway port>`, so the URL is
 * `http://3000-<id>.localhost:<gateway>`: browsers and curl resolve `*.localhost` to loopback.
 * Deno's `fetch` does not; there, use `http://127.0.0.1:<gateway>/_port/3000/…` (see
 * `docs/sdk/sandbox.md`). In secure mode (the default) every request must carry the headers
 * of `getAccessHeaders()`.
 *
 * @module
 */

import { ValidationError } from "../errors/mod.ts";

/** What the network module reads from its sandbox. */
export interface NetworkSource {
  /** The sandbox id. */
  readonly sandboxId: string;
  /** The domain of its hosts. */
  readonly domain: string;
  /** `http` or `https`. */
  readonly scheme: string;
  /** Whether port access needs the access token. */
  readonly secure: boolean;
  /** The access token, or null. */
  readonly accessToken: string | null;
}

/** The `network` module of a sandbox. */
export class NetworkModule {
  readonly #source: () => NetworkSource;

  /** Made by `Sandbox`. */
  constructor(source: () => NetworkSource) {
    this.#source = source;
  }

  /**
   * `{port}-{sandboxId}.{domain}`.
   */
  getHost(port: number): string {
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new ValidationError(`port must be an integer from 1 to 65535, got ${port}`);
    }
    const s = this.#source();
    return `${port}-${s.sandboxId}.${s.domain}`;
  }

  /** `{scheme}://{port}-{sandboxId}.{domain}`. */
  getUrl(port: number): string {
    return `${this.#source().scheme}://${this.getHost(port)}`;
  }

  /** In secure mode `{ "X-Access-Token": … }` for the sandbox's gateway; else `{}`. */
  getAccessHeaders(): Record<string, string> {
    const s = this.#source();
    return s.secure && s.accessToken ? { "X-Access-Token": s.accessToken } : {};
  }
}
