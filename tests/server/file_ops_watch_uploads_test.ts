// A watch sees what an upload produced, never the temp file it wrote through: uploads go to
// `.sandbar-upload-<random>.tmp` and are renamed (or, with overwrite=false, linked) into place.
import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";

type WatchEvent = Record<string, string>;

/** A watch response's NDJSON lines, read on demand. */
class WatchStream {
  readonly events: WatchEvent[] = [];
  readonly #reader: ReadableStreamDefaultReader<string>;
  #text = "";

  constructor(res: Response) {
    this.#reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  }

  /** Read until an event of `type` names `path`. */
  async until(type: string, path: string): Promise<void> {
    while (!this.events.some((e) => e.type === type && e.path === path)) {
      const { value, done } = await this.#reader.read();
      if (done) throw new Error(`the watch stream ended before ${type} ${path}`);
      this.#text += value;
      let nl: number;
      while ((nl = this.#text.indexOf("\n")) !== -1) {
        this.events.push(JSON.parse(this.#text.slice(0, nl)));
        this.#text = this.#text.slice(nl + 1);
      }
    }
  }

  cancel(): Promise<void> {
    return this.#reader.cancel();
  }
}

const TEMP = /\.sandbar-upload-/;

for (const recursive of [true, false]) {
  Deno.test(`file_ops: watch (recursive=${recursive}) reports an upload's file, not its temp file`, async () => {
    await using server = await startTestServer();
    const root = server.root;
    await Deno.mkdir(`${root}/w`);
    await Deno.writeTextFile(`${root}/w/old.txt`, "old");
    // A user's own file that only starts like a temp file is theirs, and reported.
    const lookalike = `${root}/w/.sandbar-upload-notes.txt`;

    const res = await server.fetch(`/files/watch?path=w&recursive=${recursive}`);
    assert.equal(res.status, 200);
    const watch = new WatchStream(res);
    await watch.until("start", `${root}/w`);

    const upload = async (query: string, body: string) => {
      const r = await server.fetch(`/files?${query}`, { method: "POST", body });
      const answer = await r.text();
      assert.equal(r.status, 200, answer);
    };
    await upload("path=w/new.txt", "a new file");
    await upload("path=w/old.txt", "replaced");
    await upload("path=w/linked.txt&overwrite=false", "linked into place");
    await Deno.writeTextFile(lookalike, "mine");
    // Events come in order: once the last write is seen, every earlier one has been.
    await watch.until("create", lookalike);
    await watch.cancel();

    const named = watch.events.filter((e) =>
      (e.path !== lookalike && TEMP.test(e.path ?? "")) || TEMP.test(e.from ?? "")
    );
    assert.deepEqual(named, [], JSON.stringify(watch.events));
    for (const name of ["new.txt", "old.txt", "linked.txt"]) {
      const path = `${root}/w/${name}`;
      assert.ok(
        watch.events.some((e) => e.type === "create" && e.path === path),
        `no create of ${path} in ${JSON.stringify(watch.events)}`,
      );
    }
    assert.equal(await Deno.readTextFile(`${root}/w/old.txt`), "replaced");
  });
}
