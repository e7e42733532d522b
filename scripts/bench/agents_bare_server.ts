/**
 * The floors of `agents_store.ts`: a bare `Deno.serve` (no pipeline, no router, no validation)
 * answering the very texts sandbar answered, so that what the answer's size and the reading of
 * a request body cost on their own is measured with the same load generator:
 *
 * - `GET /commands`: the text `GET /commands` answered;
 * - `GET /list`: the text a list of 20 agents answered;
 * - `POST /echo`: reads the body, answers the text a create answered;
 * - `POST /insert`: reads the body, inserts it as one row with its own commit (`node:sqlite`,
 *   WAL, `synchronous=NORMAL`, the store's settings), answers the same text: one commit per
 *   request, which group commit avoids;
 * - `POST /store`: reads the body, inserts it through the agents store itself
 *   (`AgentStore.insertSoon`, group commit, the store's schema and a fresh id), answers the
 *   same text: the store's own cost per create, without the pipeline and validation.
 *
 * Run: `deno run -A scripts/bench/agents_bare_server.ts <commands file> <list file> <create
 * file> <database dir>`; prints `{"event":"listening","port":…}`.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { newId, unixNow } from "../../server/agents/ids.ts";
import { AgentStore } from "../../server/agents/store.ts";

const [commandsFile, listFile, createFile, dbDir] = Deno.args;
const commands = Deno.readTextFileSync(commandsFile);
const list = Deno.readTextFileSync(listFile);
const created = Deno.readTextFileSync(createFile);
const db = new DatabaseSync(`${dbDir}/bare.sqlite`);
db.exec("PRAGMA journal_mode = WAL");
db.exec("PRAGMA synchronous = NORMAL");
db.exec(
  "CREATE TABLE IF NOT EXISTS objects (seq INTEGER PRIMARY KEY AUTOINCREMENT, " +
    "id TEXT NOT NULL UNIQUE, body TEXT NOT NULL)",
);
const insert = db.prepare("INSERT INTO objects (id, body) VALUES (?, ?)");
const storeDir = `${dbDir}/bare-store`;
Deno.mkdirSync(storeDir);
const store = AgentStore.open(storeDir);
let n = 0;
const headers = { "content-type": "application/json" };

Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(JSON.stringify({ event: "listening", port })),
}, async (req) => {
  const path = new URL(req.url).pathname;
  if (path === "/commands") return new Response(commands, { headers });
  if (path === "/list") return new Response(list, { headers });
  if (path === "/echo") {
    await req.text();
    return new Response(created, { headers });
  }
  if (path === "/insert") {
    insert.run(`row_${n++}`, await req.text());
    return new Response(created, { headers });
  }
  if (path === "/store") {
    await store.insertSoon(
      "agent",
      newId("agent"),
      "",
      unixNow(),
      await req.text(),
      null,
      "default",
    );
    return new Response(created, { headers });
  }
  return new Response("not found", { status: 404 });
});
