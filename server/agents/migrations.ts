/**
 * The store's schema, as an ordered list of migrations. The database's `user_version` is the
 * number of migrations applied; a store whose version is above the last one here was written by
 * a newer sandbar and is refused rather than rewritten.
 *
 * Never edit a migration that has shipped: add the next one.
 *
 * @module
 */

/** Migrations in order; `MIGRATIONS[i]` takes the schema from version `i` to `i + 1`. */
export const MIGRATIONS: readonly string[] = [
  // 1: every resource in one table (listing is by kind, parent and insertion order), secrets
  // sealed apart from the public body, idempotent answers, and settings such as the KDF salt.
  `
  CREATE TABLE objects (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    parent TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    body TEXT NOT NULL,
    sealed BLOB
  );
  CREATE INDEX objects_by_kind ON objects(kind, parent, seq);
  CREATE TABLE idempotency (
    identity TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    key TEXT NOT NULL,
    body_hash TEXT NOT NULL,
    status INTEGER NOT NULL,
    response TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (identity, endpoint, key)
  );
  CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
  `,
  // 2: the runtime. One ordered event log per session (the row order is the stream order, and a
  // reconnect with Last-Event-ID reads what follows its event); traces by root turn, kept apart
  // from `objects` because a trace's id is its turn's id.
  `
  CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    body TEXT NOT NULL
  );
  CREATE INDEX events_by_session ON events(session_id, seq);
  CREATE TABLE traces (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    turn_id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    otlp TEXT NOT NULL
  );
  CREATE INDEX traces_by_session ON traces(session_id, seq);
  `,
  // 3: tenants. Every object has an owner identity, recorded at creation (a child object takes
  // its parent's). Rows made before belong to `default`, and so do the sessions and automations
  // among them (their recorded owner, whose policy their tools run under, becomes `default`
  // too, so the owner that may reach one is the one it runs as). An automation another identity
  // had made is paused: it would otherwise start running under `default`'s policy unseen.
  // Lists of one owner's top-level objects go by a partial index of those alone: the children
  // (turns, items, credentials), most of the writes, are listed under their parent and do not
  // pay for it.
  `
  ALTER TABLE objects ADD COLUMN owner TEXT NOT NULL DEFAULT 'default';
  UPDATE objects SET body = json_set(body, '$.status', 'paused')
    WHERE kind = 'automation' AND json_extract(body, '$.status') = 'active'
      AND coalesce(json_extract(body, '$._internal.owner'), 'default') <> 'default';
  UPDATE objects SET body = json_set(body, '$._internal.owner', 'default')
    WHERE kind IN ('session', 'automation') AND json_extract(body, '$._internal.owner') IS NOT NULL;
  CREATE INDEX objects_by_owner ON objects(kind, owner, seq) WHERE parent = '';
  `,
];

/** The schema version this sandbar writes. */
export const SCHEMA_VERSION: number = MIGRATIONS.length;
