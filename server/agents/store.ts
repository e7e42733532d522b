/**
 * The agents group's durable store: one SQLite database (`node:sqlite`) in the data directory,
 * in WAL mode with `synchronous=NORMAL`. In WAL mode that setting keeps every committed write
 * across a crash of the server (SIGKILL included); only a power loss (or a crash of the kernel)
 * may lose the last transactions, never corrupt the file. Creates are committed in groups
 * ({@linkcode AgentStore.writeSoon}), each answered only once its group has committed, so the
 * same holds for every answered create.
 *
 * The database is opened in exclusive locking mode: the server that opened it is its only
 * reader and writer until it closes (a second server on the same data directory is refused at
 * start, with the reason). That is what lets list pages be answered from a cache kept until the
 * next write ({@linkcode AgentStore.writeCount}): no write can come from elsewhere.
 *
 * Every resource is a row of `objects`: its public JSON body, its kind, its parent (a vault for
 * a credential), its owner (the identity that made it; a child takes its parent's) and an
 * insertion sequence that orders every list. Reads that take an `owner` see only that owner's
 * rows: another owner's row is answered exactly as a missing one.
 *
 * @module
 */

import { DatabaseSync, type StatementSync } from "node:sqlite";
import { join } from "node:path";
import { DATA_FILE_MODE } from "./data_dir.ts";
import { GroupCommit } from "./group_commit.ts";
import { MIGRATIONS, SCHEMA_VERSION } from "./migrations.ts";

/** One stored object. */
export interface StoredObject {
  /** The object's id. */
  id: string;
  /** Its sequence number: the list order. */
  seq: number;
  /** Its public JSON body. */
  body: Record<string, unknown>;
  /** Its sealed secrets, if any. */
  sealed: Uint8Array | null;
  /** The identity that owns it. */
  owner: string;
}

/** Filters of a list beyond kind and parent. */
export interface ListFilter {
  /** Only this owner's objects (every owner's when absent). */
  owner?: string;
  /** Every `metadata[key]` must equal the value. */
  metadata?: Record<string, string>;
  /** A top-level string field of the body must be one of these values. */
  field?: { name: string; values: string[] };
  /** A top-level string field of the body must start with this prefix. */
  prefix?: { name: string; value: string };
}

/** One page of a list. */
export interface StoredPage {
  /** The objects, in the order asked. */
  rows: StoredObject[];
  /** Whether more follow. */
  hasMore: boolean;
}

/** A store that cannot be opened, with the reason in words. */
export class StoreOpenError extends Error {
  /** Make the error. */
  constructor(message: string) {
    super(message);
    this.name = "StoreOpenError";
  }
}

/** The file name of the database inside the data directory. */
export const DATABASE_FILE = "agents.sqlite";

/**
 * The store.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { AgentStore } from "./store.ts";
 * const dir = Deno.makeTempDirSync();
 * const store = AgentStore.open(dir);
 * store.insert("agent", "agent_1", "", 1, { id: "agent_1" }, null, "alice");
 * assert.equal(store.get("agent", "agent_1", undefined, "alice")?.body.id, "agent_1");
 * assert.equal(store.get("agent", "agent_1", undefined, "bob"), undefined);
 * store.close();
 * Deno.removeSync(dir, { recursive: true });
 * ```
 */
export class AgentStore {
  /** Every statement that may change a row must be fetched through `#stmt` (it counts it). */
  readonly #db: DatabaseSync;
  readonly #stmts = new Map<string, StatementSync>();
  readonly #arrayStmts = new Map<string, StatementSync>();
  readonly #group: GroupCommit;
  #writes = 0;

  private constructor(db: DatabaseSync) {
    this.#db = db;
    const begin = db.prepare("BEGIN IMMEDIATE");
    const commit = db.prepare("COMMIT");
    this.#group = new GroupCommit({
      begin: () => begin.run(),
      commit: () => commit.run(),
      rollback: () => this.#rollback(),
    });
  }

  /**
   * A count that changes before every statement that may change a row runs, and at every
   * rollback: a value read while it is unchanged still holds.
   */
  get writeCount(): number {
    return this.#writes;
  }

  /** Whether a transaction is open (what is read inside it may yet be rolled back). */
  get inTransaction(): boolean {
    return this.#db.isTransaction;
  }

  /** Open (or create) the store in `dataDir`, migrating an older schema forward. */
  static open(dataDir: string): AgentStore {
    const file = join(dataDir, DATABASE_FILE);
    let db: DatabaseSync;
    try {
      // Created 0600 before SQLite opens it: SQLite gives its WAL and journal the database's
      // own mode, so they are private too (its default would be 0644).
      Deno.openSync(file, { create: true, write: true, mode: DATA_FILE_MODE }).close();
      db = new DatabaseSync(file);
    } catch (e) {
      throw new StoreOpenError(`cannot open the agents store ${file}: ${(e as Error).message}`);
    }
    try {
      // Before the first access, so the lock is taken by it and the WAL index lives in memory.
      // A server still closing on this directory gets a second to let go of it.
      db.exec("PRAGMA locking_mode = EXCLUSIVE");
      db.exec("PRAGMA busy_timeout = 1000");
      inUseCheck(() => db.exec("PRAGMA journal_mode = WAL"), file);
      db.exec("PRAGMA busy_timeout = 5000");
      db.exec("PRAGMA synchronous = NORMAL");
      db.exec("PRAGMA foreign_keys = ON");
      migrate(db, file);
    } catch (e) {
      db.close();
      throw e;
    }
    return new AgentStore(db);
  }

  #stmt(sql: string): StatementSync {
    let s = this.#stmts.get(sql);
    if (!s) {
      s = this.#db.prepare(sql);
      this.#stmts.set(sql, s);
    }
    // Counted when fetched, right before it runs: nothing can read in between.
    if (!READ_ONLY.test(sql)) this.#writes++;
    return s;
  }

  /**
   * A prepared statement of the store's database, cached by its text: for the runtime's own
   * tables (the event log, traces), which keep their SQL beside the code that uses them.
   */
  prepared(sql: string): StatementSync {
    return this.#stmt(sql);
  }

  #rollback(): void {
    this.#writes++;
    if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
  }

  /**
   * Insert a new object (its body as an object, or as its JSON text). A top-level object
   * (no parent) needs its `owner`; a child always takes its parent's owner.
   */
  insert(
    kind: string,
    id: string,
    parent: string,
    createdAt: number,
    body: Record<string, unknown> | string,
    sealed: Uint8Array | null,
    owner?: string,
  ): void {
    const text = typeof body === "string" ? body : JSON.stringify(body);
    if (parent === "") {
      if (!owner) throw new Error(`a ${kind} needs an owner`);
      this.#stmt(
        "INSERT INTO objects (id, kind, parent, created_at, body, sealed, owner) " +
          "VALUES (?, ?, '', ?, ?, ?, ?)",
      ).run(id, kind, createdAt, text, sealed, owner);
      return;
    }
    // A child's owner is its parent's ('' when the parent is gone: nobody's but an operator's).
    this.#stmt(
      "INSERT INTO objects (id, kind, parent, created_at, body, sealed, owner) VALUES " +
        "(?, ?, ?, ?, ?, ?, coalesce((SELECT owner FROM objects WHERE id = ?), ''))",
    ).run(id, kind, parent, createdAt, text, sealed, parent);
  }

  /**
   * Insert a new object in the next group commit: resolves once it is committed, rejects (and
   * stores nothing) when its insert fails, without failing the other inserts of the group.
   * Not for use inside {@linkcode transaction}: the insert would not be part of it.
   */
  insertSoon(
    kind: string,
    id: string,
    parent: string,
    createdAt: number,
    body: Record<string, unknown> | string,
    sealed: Uint8Array | null,
    owner?: string,
  ): Promise<void> {
    return this.writeSoon(() => this.insert(kind, id, parent, createdAt, body, sealed, owner));
  }

  /**
   * Run `write` (store writes only) in the next group commit: resolves with its result once it
   * is committed, rejects (and keeps none of its writes) when it throws, without failing the
   * other writes of the group. `write` may run more than once; only its last run is committed.
   * Not for use inside {@linkcode transaction}: the writes would not be part of it.
   */
  writeSoon<T>(write: () => T): Promise<T> {
    return this.#group.write(write);
  }

  /** Replace an object's body (and its sealed secrets when given). */
  update(id: string, body: Record<string, unknown>, sealed?: Uint8Array | null): void {
    if (sealed === undefined) {
      this.#stmt("UPDATE objects SET body = ? WHERE id = ?").run(JSON.stringify(body), id);
    } else {
      this.#stmt("UPDATE objects SET body = ?, sealed = ? WHERE id = ?")
        .run(JSON.stringify(body), sealed, id);
    }
  }

  /**
   * One object of a kind (and parent, when given; and owner, when given), or undefined: an
   * object of another owner is not there for the caller.
   */
  get(kind: string, id: string, parent?: string, owner?: string): StoredObject | undefined {
    const row = this.#stmt(
      "SELECT id, seq, parent, body, sealed, owner FROM objects WHERE id = ? AND kind = ?",
    )
      .get(id, kind) as RawRow | undefined;
    if (!row || (parent !== undefined && row.parent !== parent)) return undefined;
    if (owner !== undefined && row.owner !== owner) return undefined;
    return fromRow(row);
  }

  /** Delete an object and every object whose parent it is, in one transaction. */
  delete(id: string): boolean {
    return this.transaction(() => {
      this.#stmt("DELETE FROM objects WHERE parent = ?").run(id);
      return Number(this.#stmt("DELETE FROM objects WHERE id = ?").run(id).changes) > 0;
    });
  }

  /**
   * The sequence number of `id` within a kind and parent (and owner, when given), or undefined
   * when it is not there.
   */
  seqOf(kind: string, parent: string, id: string, owner?: string): number | undefined {
    const row = this.#stmt(
      "SELECT seq, owner FROM objects WHERE id = ? AND kind = ? AND parent = ?",
    ).get(id, kind, parent) as { seq: number; owner: string } | undefined;
    if (owner !== undefined && row?.owner !== owner) return undefined;
    return row?.seq;
  }

  /** A page of a kind under a parent, after the object of sequence `afterSeq`. */
  list(
    kind: string,
    parent: string,
    order: "asc" | "desc",
    limit: number,
    afterSeq: number | undefined,
    filter: ListFilter = {},
  ): StoredPage {
    const { sql, args } = this.#listQuery(
      kind,
      parent,
      order,
      afterSeq,
      filter,
      "id, seq, parent, body, sealed, owner",
    );
    const rows = this.#stmt(sql).all(...args, limit + 1) as unknown as RawRow[];
    return { rows: rows.slice(0, limit).map(fromRow), hasMore: rows.length > limit };
  }

  #listQuery(
    kind: string,
    parent: string,
    order: "asc" | "desc",
    afterSeq: number | undefined,
    filter: ListFilter,
    columns: string,
  ): { sql: string; args: (string | number)[] } {
    // A top-level list of one owner names `parent = ''` literally, so the partial index on
    // owner (of top-level objects only) can serve it.
    const ownTopLevel = filter.owner !== undefined && parent === "";
    const where = ownTopLevel ? ["kind = ?", "parent = ''"] : ["kind = ?", "parent = ?"];
    const args: (string | number)[] = ownTopLevel ? [kind] : [kind, parent];
    if (filter.owner !== undefined) {
      where.push("owner = ?");
      args.push(filter.owner);
    }
    if (afterSeq !== undefined) {
      where.push(order === "asc" ? "seq > ?" : "seq < ?");
      args.push(afterSeq);
    }
    for (const [key, value] of Object.entries(filter.metadata ?? {})) {
      where.push(
        "EXISTS (SELECT 1 FROM json_each(body, '$.metadata') WHERE key = ? AND value = ?)",
      );
      args.push(key, value);
    }
    for (const name of [filter.field?.name, filter.prefix?.name]) {
      if (name !== undefined && !/^[a-z_]+$/.test(name)) throw new Error(`bad field ${name}`);
    }
    if (filter.field) {
      where.push(
        `json_extract(body, '$.${filter.field.name}') IN (${
          filter.field.values.map(() => "?").join(", ")
        })`,
      );
      args.push(...filter.field.values);
    }
    if (filter.prefix) {
      where.push(`substr(json_extract(body, '$.${filter.prefix.name}'), 1, length(?)) = ?`);
      args.push(filter.prefix.value, filter.prefix.value);
    }
    const sql = `SELECT ${columns} FROM objects WHERE ${where.join(" AND ")} ` +
      `ORDER BY seq ${order === "asc" ? "ASC" : "DESC"} LIMIT ?`;
    return { sql, args };
  }

  /**
   * The same page as {@linkcode list}, with each body as its stored JSON text: a list whose
   * objects are answered as stored is then written without parsing and serialising each one.
   */
  listText(
    kind: string,
    parent: string,
    order: "asc" | "desc",
    limit: number,
    afterSeq: number | undefined,
    filter: ListFilter = {},
  ): { ids: string[]; bodies: string[]; hasMore: boolean } {
    const { sql, args } = this.#listQuery(kind, parent, order, afterSeq, filter, "id, body");
    // Rows as arrays: no object with named columns made per row.
    let stmt = this.#arrayStmts.get(sql);
    if (!stmt) {
      stmt = this.#db.prepare(sql);
      (stmt as unknown as { setReturnArrays(on: boolean): void }).setReturnArrays(true);
      this.#arrayStmts.set(sql, stmt);
    }
    const rows = stmt.all(...args, limit + 1) as unknown as [string, string][];
    const n = Math.min(rows.length, limit);
    const ids: string[] = new Array(n);
    const bodies: string[] = new Array(n);
    for (let i = 0; i < n; i++) [ids[i], bodies[i]] = rows[i];
    return { ids, bodies, hasMore: rows.length > limit };
  }

  /** A value of the `meta` table. */
  getMeta(key: string): Uint8Array | undefined {
    const row = this.#stmt("SELECT value FROM meta WHERE key = ?").get(key) as
      | { value: Uint8Array }
      | undefined;
    return row?.value;
  }

  /** Set a value of the `meta` table, unless one is there already; returns the value kept. */
  initMeta(key: string, value: Uint8Array): Uint8Array {
    this.#stmt("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)").run(key, value);
    return this.getMeta(key)!;
  }

  /** A stored idempotent answer. */
  idempotent(
    identity: string,
    endpoint: string,
    key: string,
    since: number,
  ): { bodyHash: string; status: number; response: string } | undefined {
    const row = this.#stmt(
      "SELECT body_hash, status, response FROM idempotency " +
        "WHERE identity = ? AND endpoint = ? AND key = ? AND created_at >= ?",
    ).get(identity, endpoint, key, since) as
      | { body_hash: string; status: number; response: string }
      | undefined;
    return row && { bodyHash: row.body_hash, status: row.status, response: row.response };
  }

  /** Keep an idempotent answer, dropping those older than `expiredBefore`. */
  keepIdempotent(
    identity: string,
    endpoint: string,
    key: string,
    bodyHash: string,
    status: number,
    response: string,
    now: number,
    expiredBefore: number,
  ): void {
    this.#stmt("DELETE FROM idempotency WHERE created_at < ?").run(expiredBefore);
    this.#stmt(
      "INSERT OR REPLACE INTO idempotency " +
        "(identity, endpoint, key, body_hash, status, response, created_at) " +
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
    ).run(identity, endpoint, key, bodyHash, status, response, now);
  }

  /** Run `fn` in one transaction: all of its writes or none. Inside another, it joins it. */
  transaction<T>(fn: () => T): T {
    if (this.#db.isTransaction) return fn();
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const result = fn();
      this.#db.exec("COMMIT");
      return result;
    } catch (e) {
      this.#rollback();
      throw e;
    }
  }

  /** Every object of a kind whose top-level `field` equals `value` (for recovery at start). */
  byField(kind: string, field: string, value: string): StoredObject[] {
    if (!/^[a-z_]+$/.test(field)) throw new Error(`bad field ${field}`);
    return (this.#stmt(
      `SELECT id, seq, parent, body, sealed, owner FROM objects WHERE kind = ? AND json_extract(body, '$.${field}') = ?`,
    ).all(kind, value) as unknown as RawRow[]).map(fromRow);
  }

  /** Close the database (the WAL is checkpointed). */
  close(): void {
    if (this.#db.isOpen) this.#group.flush();
    this.#stmts.clear();
    this.#arrayStmts.clear();
    if (this.#db.isOpen) this.#db.close();
  }
}

/** Statements that change no row. */
const READ_ONLY = /^\s*SELECT\b/i;

/** Run the first access of `file`, saying so when another process holds it. */
function inUseCheck(access: () => void, file: string): void {
  try {
    access();
  } catch (e) {
    if (!/database is locked/i.test((e as Error).message)) throw e;
    throw new StoreOpenError(
      `the agents store ${file} is in use by another process (another sandbar with the same ` +
        `--data-dir?); stop it, or start with another --data-dir.`,
    );
  }
}

interface RawRow {
  id: string;
  seq: number;
  parent: string;
  body: string;
  sealed: Uint8Array | null;
  owner: string;
}

function fromRow(row: RawRow): StoredObject {
  return {
    id: row.id,
    seq: row.seq,
    body: JSON.parse(row.body),
    sealed: row.sealed,
    owner: row.owner,
  };
}

function migrate(db: DatabaseSync, file: string): void {
  const { user_version: version } = db.prepare("PRAGMA user_version").get() as {
    user_version: number;
  };
  if (version > SCHEMA_VERSION) {
    throw new StoreOpenError(
      `the agents store ${file} has schema version ${version}, written by a newer sandbar; ` +
        `this one knows versions up to ${SCHEMA_VERSION}. Upgrade sandbar, or start with ` +
        `another --data-dir. The store was not changed.`,
    );
  }
  for (let v = version; v < SCHEMA_VERSION; v++) {
    db.exec("BEGIN IMMEDIATE");
    try {
      db.exec(MIGRATIONS[v]);
      db.exec(`PRAGMA user_version = ${v + 1}`);
      db.exec("COMMIT");
    } catch (e) {
      db.exec("ROLLBACK");
      throw new StoreOpenError(
        `migrating the agents store ${file} to version ${v + 1} failed: ${(e as Error).message}`,
      );
    }
  }
}
