/**
 * Secrets at rest: AES-256-GCM through WebCrypto. The key is derived with HKDF-SHA-256 from the
 * secret the server is given at start (`SANDBAR_SECRET_KEY`) and a random salt kept in the
 * store; without that variable, from a random key file `store.key` (mode 0600) in the data
 * directory. Each sealed value is bound to its object's id (the GCM additional data), so a
 * ciphertext copied onto another row does not open.
 *
 * A check value sealed when the store is created tells at start whether the key is the one the
 * store was written with, so a changed key is a clear error, not garbage later.
 *
 * @module
 */

import { join } from "node:path";
import type { AgentStore } from "./store.ts";
import { StoreOpenError } from "./store.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const NONCE_BYTES = 12;
const CHECK_TEXT = "sandbar agents store key check";

/** The key file's name in the data directory. */
export const KEY_FILE = "store.key";

/**
 * Seals and opens secrets.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SecretBox } from "./crypto.ts";
 * const box = await SecretBox.fromBytes(new Uint8Array(32));
 * const sealed = await box.seal({ token: "t" }, "cred_1");
 * assert.deepEqual(await box.open(sealed, "cred_1"), { token: "t" });
 * ```
 */
export class SecretBox {
  readonly #key: CryptoKey;

  private constructor(key: CryptoKey) {
    this.#key = key;
  }

  /** A box over 32 raw key bytes. */
  static async fromBytes(bytes: Uint8Array): Promise<SecretBox> {
    const key = await crypto.subtle.importKey("raw", bytes as BufferSource, "AES-GCM", false, [
      "encrypt",
      "decrypt",
    ]);
    return new SecretBox(key);
  }

  /**
   * The store's box: from `secret` (HKDF with the store's salt) or the data directory's key
   * file, checked against the store's check value.
   */
  static async forStore(
    store: AgentStore,
    dataDir: string,
    secret: string | undefined,
  ): Promise<SecretBox> {
    let box: SecretBox;
    if (secret !== undefined) {
      if (secret.length < 16) {
        throw new StoreOpenError("SANDBAR_SECRET_KEY must be at least 16 characters");
      }
      const salt = store.initMeta("kdf_salt", crypto.getRandomValues(new Uint8Array(16)));
      const base = await crypto.subtle.importKey("raw", encoder.encode(secret), "HKDF", false, [
        "deriveKey",
      ]);
      const key = await crypto.subtle.deriveKey(
        {
          name: "HKDF",
          hash: "SHA-256",
          salt: salt as BufferSource,
          info: encoder.encode("sandbar agents store v1"),
        },
        base,
        { name: "AES-GCM", length: 256 },
        false,
        ["encrypt", "decrypt"],
      );
      box = new SecretBox(key);
    } else {
      box = await SecretBox.fromBytes(await keyFile(dataDir));
    }
    const check = store.getMeta("key_check");
    if (check === undefined) {
      store.initMeta("key_check", await box.seal(CHECK_TEXT, "key_check"));
    } else {
      let ok = false;
      try {
        ok = (await box.open(check, "key_check")) === CHECK_TEXT;
      } catch { /* wrong key */ }
      if (!ok) {
        throw new StoreOpenError(
          `the agents store in ${dataDir} was sealed with another key ` +
            (secret !== undefined
              ? "(SANDBAR_SECRET_KEY differs from the one it was created with)"
              : `(${KEY_FILE} changed, or the store was created with SANDBAR_SECRET_KEY)`),
        );
      }
    }
    return box;
  }

  /** Seal a JSON value, bound to `id`: nonce then ciphertext. */
  async seal(value: unknown, id: string): Promise<Uint8Array> {
    const nonce = crypto.getRandomValues(new Uint8Array(NONCE_BYTES));
    const data = encoder.encode(JSON.stringify(value));
    const ct = new Uint8Array(
      await crypto.subtle.encrypt(
        { name: "AES-GCM", iv: nonce, additionalData: encoder.encode(id) },
        this.#key,
        data,
      ),
    );
    const out = new Uint8Array(NONCE_BYTES + ct.length);
    out.set(nonce);
    out.set(ct, NONCE_BYTES);
    return out;
  }

  /** Open a value sealed for `id`; throws when it was not. */
  async open(sealed: Uint8Array, id: string): Promise<unknown> {
    const plain = await crypto.subtle.decrypt(
      {
        name: "AES-GCM",
        iv: sealed.slice(0, NONCE_BYTES),
        additionalData: encoder.encode(id),
      },
      this.#key,
      sealed.slice(NONCE_BYTES),
    );
    return JSON.parse(decoder.decode(plain));
  }
}

async function keyFile(dataDir: string): Promise<Uint8Array> {
  const path = join(dataDir, KEY_FILE);
  // Written whole under a temporary name, then linked into place: a crash never leaves a short
  // key file, and of two servers starting at once, one key wins and both read it.
  const temp = `${path}.${crypto.randomUUID()}.tmp`;
  try {
    const file = await Deno.open(temp, { createNew: true, write: true, mode: 0o600 });
    try {
      await file.write(crypto.getRandomValues(new Uint8Array(32)));
      await file.sync();
    } finally {
      file.close();
    }
    await Deno.link(temp, path);
  } catch (e) {
    if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
  } finally {
    await Deno.remove(temp).catch(() => {});
  }
  const info = await Deno.stat(path);
  if (info.mode !== null && (info.mode & 0o077) !== 0) {
    throw new StoreOpenError(`${path} must be readable by its owner only (chmod 600)`);
  }
  const bytes = await Deno.readFile(path);
  if (bytes.length !== 32) throw new StoreOpenError(`${path} must hold exactly 32 bytes`);
  return bytes;
}
