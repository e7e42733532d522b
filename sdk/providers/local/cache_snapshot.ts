/**
 * A snapshot of one of Deno's cache databases (`module_cache.ts`): the rows of the modules
 * whose URL starts with one of a few prefixes, in a database of the same schema, left in WAL
 * mode with an empty `-wal` beside it and a `-shm` holding SQLite's own index of that empty log.
 * Bound read-only into a sandbox, SQLite reads it as it is (it needs those two files to exist,
 * and nothing writes them), while the live database on the host could only be read while some
 * process there held it open.
 *
 * The `-shm` is the one SQLite made for the snapshot, not an empty file: with an empty one that it
 * may not write, SQLite rebuilds the index in memory at each read and drops its page cache with it,
 * so each module's lookup reads its pages again. Measured in a container, a server's start to its
 * listening line p50 155 ms against 165.5 with an empty `-shm` (32 starts each, interleaved,
 * machine shared). Should a SQLite ever find the index unusable, it reads the database as with an
 * empty one: slower, never wrong (the log it indexes is empty either way).
 *
 * @module
 */

/**
 * Copy into a new database `to` the tables of `from`, with the rows whose `specifier` starts
 * with one of `prefixes` (every row of a table without one, such as Deno's version in `info`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DatabaseSync } from "node:sqlite";
 * import { snapshotDatabase } from "./cache_snapshot.ts";
 * const dir = await Deno.makeTempDir();
 * const live = new DatabaseSync(`${dir}/live`);
 * live.exec("CREATE TABLE info (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
 * live.exec("CREATE TABLE codecache (specifier TEXT NOT NULL, data BLOB)");
 * live.exec("INSERT INTO info VALUES ('CLI_VERSION', '2.9.6')");
 * live.exec("INSERT INTO codecache VALUES ('file:///pkg/a.ts', x'01'), ('file:///other/b.ts', x'02')");
 * live.close();
 * await snapshotDatabase(`${dir}/live`, `${dir}/snap`, ["file:///pkg/"]);
 * const snap = new DatabaseSync(`${dir}/snap`, { readOnly: true });
 * assert.deepEqual(snap.prepare("SELECT specifier FROM codecache").all().map((r) => r.specifier), [
 *   "file:///pkg/a.ts",
 * ]);
 * assert.equal(snap.prepare("SELECT count(*) AS n FROM info").get()?.n, 1);
 * snap.close();
 * assert.equal((await Deno.stat(`${dir}/snap-wal`)).size, 0);
 * // SQLite's index of the empty log, not an empty file (readers then keep their page cache).
 * assert.ok((await Deno.stat(`${dir}/snap-shm`)).size > 0);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function snapshotDatabase(
  from: string,
  to: string,
  prefixes: readonly string[],
): Promise<void> {
  // Imported here, not at the top: the SDK's client parts are bundled for Node 20, which has no
  // `node:sqlite`, and a bundler hoists a static import of it into the bundle's first line.
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(to);
  try {
    db.prepare("ATTACH DATABASE ? AS live").run(from);
    const tables = db.prepare(
      "SELECT name, sql FROM live.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
    ).all() as { name: string; sql: string }[];
    for (const { name, sql } of tables) {
      db.exec(sql);
      const quoted = `"${name.replaceAll('"', '""')}"`;
      const columns = db.prepare(`SELECT name FROM pragma_table_info(?, 'live')`).all(name)
        .map((c) => c.name);
      if (!columns.includes("specifier")) {
        db.exec(`INSERT INTO main.${quoted} SELECT * FROM live.${quoted}`);
        continue;
      }
      const copy = db.prepare(
        `INSERT OR IGNORE INTO main.${quoted} SELECT * FROM live.${quoted} ` +
          "WHERE substr(specifier, 1, length(?1)) = ?1",
      );
      for (const prefix of prefixes) copy.run(prefix);
    }
    db.exec("DETACH DATABASE live");
    // Deno opens its caches with `PRAGMA optimize`, which analyses a table never analysed: a
    // write, refused on a read-only file, and Deno then drops the whole database for an empty one
    // in memory. Analysed here, there is nothing left for it to do.
    db.exec("ANALYZE");
    db.exec("PRAGMA optimize");
    db.exec("PRAGMA journal_mode = WAL");
  } finally {
    db.close();
  }
  // Closing the last connection removed them; SQLite opens a read-only WAL database only with
  // both present. The index is taken from a connection that read the snapshot (SQLite made it
  // then, for the empty log) before its close removes it.
  const reader = new DatabaseSync(to);
  let index: Uint8Array;
  try {
    reader.prepare("SELECT count(*) FROM sqlite_master").get();
    index = Deno.readFileSync(to + "-shm");
  } finally {
    reader.close();
  }
  Deno.writeFileSync(to + "-wal", new Uint8Array());
  Deno.writeFileSync(to + "-shm", index);
}
