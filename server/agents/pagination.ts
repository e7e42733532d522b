/**
 * The one cursor pagination of every `/v1/` list: `after` (an id of the same list, exclusive in
 * the order asked), `limit` (1–100, default 20) and `order` (`asc`|`desc`, default `desc`, by
 * creation), answered as `{object: "list", data, first_id, last_id, has_more}`. An `after` that
 * is not an object of this very list (unknown, deleted, or of another list) is a 400 naming
 * `after`: an empty page would end a client's iteration silently.
 *
 * @module
 */

import { invalid } from "./errors.ts";
import { PageCache } from "./page_cache.ts";
import { type ParsedQuery, parseQuery } from "./v1_request_reader.ts";
import type { AgentStore, ListFilter, StoredObject } from "./store.ts";

/** The query parameters every list takes. */
export const PAGE_PARAMS: readonly string[] = ["after", "limit", "order"];

/** A list page on the wire. */
export interface ListPage<T> {
  /** Always `list`. */
  object: "list";
  /** The page's objects. */
  data: T[];
  /** Id of the first object, or null on an empty page. */
  first_id: string | null;
  /** Id of the last object, or null on an empty page. */
  last_id: string | null;
  /** Whether another page follows. */
  has_more: boolean;
}

/** `after`, `limit` and `order` of a query, checked. */
export interface PageRequest {
  /** The cursor, if any. */
  after?: string;
  /** Page size. */
  limit: number;
  /** Order by creation. */
  order: "asc" | "desc";
}

/**
 * Read `after`, `limit` and `order`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pageRequest } from "./pagination.ts";
 * import { parseQuery } from "./v1_request_reader.ts";
 * assert.deepEqual(pageRequest(parseQuery("limit=5", ["limit"])), { after: undefined, limit: 5, order: "desc" });
 * assert.throws(() => pageRequest(parseQuery("limit=0", ["limit"])), /limit/);
 * ```
 */
export function pageRequest(q: ParsedQuery, param = "after"): PageRequest {
  const rawLimit = q.plain.get("limit");
  let limit = 20;
  if (rawLimit !== undefined) {
    limit = Number(rawLimit);
    if (!/^\d+$/.test(rawLimit) || limit < 1 || limit > 100) {
      throw invalid(
        "limit",
        `Invalid 'limit': expected an integer from 1 to 100, got '${rawLimit}'.`,
      );
    }
  }
  const order = q.plain.get("order") ?? "desc";
  if (order !== "asc" && order !== "desc") {
    throw invalid("order", `Invalid 'order': expected 'asc' or 'desc', got '${order}'.`);
  }
  const after = q.plain.get(param);
  if (after === "") throw invalid(param, `Invalid '${param}': empty cursor.`);
  return { after, limit, order };
}

function afterSeqOf(
  store: AgentStore,
  kind: string,
  parent: string,
  page: PageRequest,
  param: string,
  owner: string | undefined,
): number | undefined {
  if (page.after === undefined) return undefined;
  const seq = store.seqOf(kind, parent, page.after, owner);
  if (seq === undefined) {
    throw invalid(param, `Invalid '${param}': '${page.after}' is not an object of this list.`);
  }
  return seq;
}

/** The page caches, one per open store. */
const caches = new WeakMap<AgentStore, PageCache>();

/**
 * The page text kept under `key` since the store's last write, or the one `read` makes (kept,
 * unless it was read inside an open transaction). `key` must name every input of `read` other
 * than the store's rows; a `read` that throws keeps nothing.
 */
export function cachedPageText(store: AgentStore, key: string, read: () => string): string {
  let cache = caches.get(store);
  if (!cache) caches.set(store, cache = new PageCache());
  const count = store.writeCount;
  const kept = cache.get(key, count);
  if (kept !== undefined) return kept;
  const text = read();
  if (!store.inTransaction && store.writeCount === count) cache.set(key, count, text);
  return text;
}

/**
 * One page of objects answered as stored, as the JSON text of the list: the stored bodies are
 * joined as they are, without a parse and a serialisation each. The text is kept until the
 * store's next write (`page_cache.ts`), so a list asked again, the common case of a client
 * polling, is answered without SQLite.
 */
export function listPageText(
  store: AgentStore,
  kind: string,
  parent: string,
  page: PageRequest,
  filter?: ListFilter,
  param = "after",
): string {
  return cachedPageText(
    store,
    pageKey(kind, parent, page, filter, param),
    () => readPageText(store, kind, parent, page, filter, param),
  );
}

/**
 * A list that takes only `after`, `limit` and `order`, answered from the URL it was asked with:
 * a page asked again with the same query string is answered from the cache without even
 * decoding the query (a query that is refused is never kept, so it is refused every time).
 * `owner` confines it to one owner's objects (undefined: every owner's).
 */
export function plainListText(
  store: AgentStore,
  kind: string,
  parent: string,
  url: string,
  owner: string | undefined,
): string {
  const q = url.indexOf("?");
  const search = q < 0 ? "" : url.slice(q);
  // The owner is JSON-quoted (or absent): no owner's key can be another's.
  const key = `?${kind}|${parent}|${owner === undefined ? "*" : JSON.stringify(owner)}|${search}`;
  return cachedPageText(store, key, () => {
    const page = pageRequest(parseQuery(new URL(url).search, PAGE_PARAMS));
    return readPageText(
      store,
      kind,
      parent,
      page,
      owner === undefined ? undefined : { owner },
      "after",
    );
  });
}

/** Every input of a page, unambiguously (ids, kinds and values are JSON-quoted). */
function pageKey(
  kind: string,
  parent: string,
  page: PageRequest,
  filter: ListFilter | undefined,
  param: string,
): string {
  const head = `${page.order}|${page.limit}|${param}|${kind}|${parent}|${page.after ?? ""}`;
  if (!filter || (!filter.metadata && !filter.field && !filter.prefix && !filter.owner)) {
    return head;
  }
  return JSON.stringify([
    head,
    filter.owner ?? null,
    filter.metadata ?? null,
    filter.field ?? null,
    filter.prefix ?? null,
  ]);
}

function readPageText(
  store: AgentStore,
  kind: string,
  parent: string,
  page: PageRequest,
  filter: ListFilter | undefined,
  param: string,
): string {
  const afterSeq = afterSeqOf(store, kind, parent, page, param, filter?.owner);
  const { ids, bodies, hasMore } = store.listText(
    kind,
    parent,
    page.order,
    page.limit,
    afterSeq,
    filter,
  );
  const first = ids.length > 0 ? JSON.stringify(ids[0]) : "null";
  const last = ids.length > 0 ? JSON.stringify(ids[ids.length - 1]) : "null";
  return `{"object":"list","data":[${bodies.join(",")}],"first_id":${first},` +
    `"last_id":${last},"has_more":${hasMore}}`;
}

/**
 * One page of a kind under a parent, as the wire wants it (`present` maps a stored object to
 * its public form).
 */
export function listPage<T extends { id: string }>(
  store: AgentStore,
  kind: string,
  parent: string,
  page: PageRequest,
  present: (o: StoredObject) => T,
  filter?: ListFilter,
  param = "after",
): ListPage<T> {
  const afterSeq = afterSeqOf(store, kind, parent, page, param, filter?.owner);
  const { rows, hasMore } = store.list(kind, parent, page.order, page.limit, afterSeq, filter);
  const data = rows.map(present);
  return {
    object: "list",
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: hasMore,
  };
}
