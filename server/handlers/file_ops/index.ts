/**
 * The file_ops group: list, stat, mkdir, delete, move, search, archive, watch, upload and
 * download (and the legacy `/upload` and `/download`). Every path goes through the link-aware
 * path guard (`server/guards/paths/resolve.ts`); every write is atomic; every body and every
 * file streams. The wire format is in `docs/server/file_ops.md`.
 *
 * @module
 */

import { fileSystemError } from "../../files/errors.ts";
import type { FileOpsId } from "../../endpoints.ts";
import type { EndpointHandler, GroupHandlers } from "../../pipeline/handler.ts";
import { archive } from "./archive.ts";
import { deletePath } from "./delete.ts";
import { download } from "./download.ts";
import { listDirectory } from "./list.ts";
import { makeDirectory } from "./mkdir.ts";
import { movePath } from "./move.ts";
import { search } from "./search.ts";
import { statPath } from "./stat.ts";
import { upload } from "./upload.ts";
import { watch } from "./watch.ts";

/** A handler whose file-system errors come out with the contract's codes. */
function withFileErrors(handler: EndpointHandler): EndpointHandler {
  return async (c) => {
    try {
      return await handler(c);
    } catch (e) {
      throw fileSystemError(e);
    }
  };
}

/** Every handler of a map wrapped by {@linkcode withFileErrors}, keeping the map's ids. */
function allWithFileErrors<Id extends FileOpsId>(
  handlers: GroupHandlers<Id>,
): GroupHandlers<Id> {
  const wrapped: Partial<Record<Id, EndpointHandler>> = {};
  for (const id of Object.keys(handlers) as Id[]) wrapped[id] = withFileErrors(handlers[id]);
  return wrapped as GroupHandlers<Id>;
}

/**
 * The file_ops group's handlers.
 */
export const fileOpsHandlers: GroupHandlers<FileOpsId> = allWithFileErrors<FileOpsId>({
  files_list: listDirectory,
  files_stat: statPath,
  files_mkdir: makeDirectory,
  files_delete: deletePath,
  files_move: movePath,
  files_search: search,
  files_archive: archive,
  files_watch: watch,
  files_upload: (c) => upload(c, false),
  files_download: (c) => download(c, false),
  files_upload_legacy: (c) => upload(c, true),
  files_download_legacy: (c) => download(c, true),
});
