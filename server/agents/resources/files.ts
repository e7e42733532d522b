/**
 * `/v1/files`: uploads kept in the data directory (`files/<id>`), for environments to
 * materialise (`{type: "file_id"}`) and for callers to read back. An upload is streamed to
 * disk as it arrives, so a large file does not grow the server's memory; its own body limit is
 * 512 MiB (the endpoint's default, which the policy's `endpoints.agents_files_create.limits`
 * may change) instead of the 10 MiB that JSON bodies get.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { join } from "node:path";
import type { Context } from "hono";
import type { AgentsId } from "../../endpoints.ts";
import type { HandlerMap } from "../../pipeline/handler.ts";
import { ApiError } from "../../errors.ts";
import { collectYoungGarbage } from "../../files/memory.ts";
import { multipartBoundary, readMultipart } from "../../files/multipart.ts";
import type { ServerEnv } from "../../state.ts";
import { invalid, notFound } from "../errors.ts";
import { newId, unixNow } from "../ids.ts";
import { idempotentCreate, json, jsonText } from "../idempotency.ts";
import { listPageText, PAGE_PARAMS, pageRequest } from "../pagination.ts";
import { parseQuery } from "../v1_request_reader.ts";
import { agentsService } from "../service.ts";
import { FILE_PURPOSES, fileContentPath, filesDir } from "../domain/files.ts";
import type { AgentsCore } from "../core.ts";
import { tenantOf } from "../tenants.ts";
import type { StoredObject } from "../store.ts";

const MAX_FIELD_BYTES = 4096;

/** Bytes written between two young-generation collections, as the file group's uploads do. */
const COLLECT_EVERY = 16 * 1024 * 1024;

async function fieldText(body: ReadableStream<Uint8Array>, name: string): Promise<string> {
  const bytes = new Uint8Array(await new Response(body).arrayBuffer());
  if (bytes.length > MAX_FIELD_BYTES) throw invalid(name, `Invalid '${name}': too long.`);
  return new TextDecoder().decode(bytes);
}

interface Upload {
  temp: string;
  bytes: number;
  filename: string;
  digest: string;
}

/** Read the multipart body: the file streamed to a temp file, the other fields as text. */
async function readUpload(
  c: Context<ServerEnv>,
  service: AgentsCore,
): Promise<{ upload?: Upload; fields: Map<string, string> }> {
  const boundary = multipartBoundary(c.req.header("content-type") ?? null);
  if (!boundary || !c.req.raw.body) {
    throw invalid(null, "The body must be multipart/form-data with 'file' and 'purpose'.");
  }
  const fields = new Map<string, string>();
  let upload: Upload | undefined;
  const dir = filesDir(service);
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  try {
    for await (const part of readMultipart(c.req.raw.body, boundary)) {
      if (part.name === "file") {
        if (upload || part.filename === null) {
          await part.body.cancel();
          throw invalid("file", "Invalid 'file': expected exactly one file part with a filename.");
        }
        const temp = join(dir, `.upload-${newId("file")}`);
        const hash = createHash("sha256");
        let bytes = 0;
        const file = await Deno.open(temp, { createNew: true, write: true, mode: 0o600 });
        upload = { temp, bytes: 0, filename: part.filename, digest: "" };
        try {
          let sinceCollect = 0;
          for await (const chunk of part.body) {
            bytes += chunk.byteLength;
            hash.update(chunk);
            // A synchronous write per chunk: the async one cost several times the upload's
            // time on a busy machine, and a local disk write does not block for long.
            for (let off = 0; off < chunk.byteLength;) off += file.writeSync(chunk.subarray(off));
            if ((sinceCollect += chunk.byteLength) >= COLLECT_EVERY) {
              sinceCollect = 0;
              await collectYoungGarbage();
            }
          }
        } finally {
          file.close();
        }
        upload.bytes = bytes;
        upload.digest = hash.digest("hex");
      } else if (
        part.name === "purpose" || part.name === "expires_after[anchor]" ||
        part.name === "expires_after[seconds]"
      ) {
        fields.set(part.name, await fieldText(part.body, part.name));
      } else {
        await part.body.cancel();
        throw invalid(part.name, `Unknown parameter: '${part.name}'.`);
      }
    }
  } catch (e) {
    if (upload) await Deno.remove(upload.temp).catch(() => {});
    throw e;
  }
  return { upload, fields };
}

function expiresAt(fields: Map<string, string>, now: number): number | null {
  const anchor = fields.get("expires_after[anchor]");
  const seconds = fields.get("expires_after[seconds]");
  if (anchor === undefined && seconds === undefined) return null;
  if (anchor !== "created_at") {
    throw invalid("expires_after.anchor", "Invalid 'expires_after.anchor': expected 'created_at'.");
  }
  const n = Number(seconds);
  if (!/^\d+$/.test(seconds ?? "") || n < 3600 || n > 2_592_000) {
    throw invalid(
      "expires_after.seconds",
      "Invalid 'expires_after.seconds': expected an integer from 3600 to 2592000.",
    );
  }
  return now + n;
}

function storedFile(c: Context<ServerEnv>): StoredObject {
  const { store } = agentsService(c.var.state);
  const id = c.req.param("file_id")!;
  const found = store.get("file", id, "", tenantOf(c).sees);
  if (!found) throw notFound("file", id, "file_id");
  return found;
}

/** The files handlers. */
export const filesResourceHandlers: HandlerMap<AgentsId> = {
  agents_files_create: async (c) => {
    const service = agentsService(c.var.state);
    const { upload, fields } = await readUpload(c, service);
    try {
      if (!upload) throw invalid("file", "Missing required parameter: 'file'.");
      const purpose = fields.get("purpose");
      if (purpose === undefined) throw invalid("purpose", "Missing required parameter: 'purpose'.");
      if (!FILE_PURPOSES.includes(purpose)) {
        throw invalid(
          "purpose",
          `Invalid 'purpose': '${purpose}'; expected one of ${FILE_PURPOSES.join(", ")}.`,
        );
      }
      const now = unixNow();
      const owner = tenantOf(c).id;
      const expires = expiresAt(fields, now);
      const fingerprint = JSON.stringify([upload.digest, upload.filename, [...fields]]);
      return await idempotentCreate(c, service.store, fingerprint, async (commit) => {
        const id = newId("file");
        const file: Record<string, unknown> = {
          id,
          object: "file",
          bytes: upload.bytes,
          created_at: now,
          filename: upload.filename,
          purpose,
          status: "processed",
          expires_at: expires,
          status_details: null,
        };
        // The content is in place before its record is committed: no record without content.
        await Deno.rename(upload.temp, fileContentPath(service, id));
        const answer = { status: 200, body: file };
        try {
          await commit.soon(
            answer,
            () => service.store.insert("file", id, "", now, file, null, owner),
          );
        } catch (e) {
          await Deno.remove(fileContentPath(service, id)).catch(() => {});
          throw e;
        }
        return answer;
      });
    } finally {
      // Renamed into place when created; otherwise (refused, or a replay) it goes.
      await Deno.remove(upload?.temp ?? "\0").catch(() => {});
    }
  },
  agents_files_list: (c) => {
    const { store } = agentsService(c.var.state);
    const q = parseQuery(new URL(c.req.url).search, [...PAGE_PARAMS, "purpose"]);
    const page = pageRequest(q);
    const purpose = q.plain.get("purpose");
    const owner = tenantOf(c).sees;
    const filter = purpose === undefined
      ? { owner }
      : { owner, field: { name: "purpose", values: [purpose] } };
    return jsonText(listPageText(store, "file", "", page, filter));
  },
  agents_files_retrieve: (c) => json({ status: 200, body: storedFile(c).body }),
  agents_files_content: async (c) => {
    const service = agentsService(c.var.state);
    const found = storedFile(c);
    let file: Deno.FsFile;
    try {
      file = await Deno.open(fileContentPath(service, found.id));
    } catch (e) {
      throw new ApiError(
        "internal",
        `The content of ${found.id} is missing from the data directory`,
        {
          cause: e,
        },
      );
    }
    return new Response(file.readable, {
      status: 200,
      headers: {
        "content-type": "application/octet-stream",
        "content-length": String(found.body.bytes),
      },
    });
  },
  agents_files_delete: async (c) => {
    const service = agentsService(c.var.state);
    const found = storedFile(c);
    service.store.delete(found.id);
    await Deno.remove(fileContentPath(service, found.id)).catch(() => {});
    return json({ status: 200, body: { id: found.id, object: "file", deleted: true } });
  },
};
