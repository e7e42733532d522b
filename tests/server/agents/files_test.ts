import assert from "node:assert/strict";
import OpenAI, { toFile } from "openai";
import { rejection, startAgentsServer } from "./helpers.ts";

Deno.test("files: create, list by purpose across pages, retrieve, content, delete, 404s", async () => {
  await using server = await startAgentsServer();
  const { client } = server;
  const bytes = new TextEncoder().encode("hello, file\n");
  const created = await client.files.create({
    file: await toFile(bytes, "hello.txt"),
    purpose: "user_data",
  });
  assert.match(created.id, /^file-[0-9a-f]+$/);
  assert.equal(created.object, "file");
  assert.equal(created.bytes, bytes.length);
  assert.equal(created.filename, "hello.txt");
  assert.equal(created.purpose, "user_data");
  assert.equal(created.status, "processed");
  assert.deepEqual(await client.files.retrieve(created.id), created);
  const content = await client.files.content(created.id);
  assert.deepEqual(new Uint8Array(await content.arrayBuffer()), bytes);

  const ids = [created.id];
  for (let i = 0; i < 4; i++) {
    ids.push(
      (await client.files.create({
        file: await toFile(new Uint8Array([i]), `b${i}.bin`),
        purpose: "batch",
      })).id,
    );
  }
  const batch: string[] = [];
  for await (const f of client.files.list({ purpose: "batch", limit: 1, order: "asc" })) {
    batch.push(f.id);
  }
  assert.deepEqual(batch, ids.slice(1));
  const all: string[] = [];
  for await (const f of client.files.list({ limit: 2 })) all.push(f.id);
  assert.deepEqual(all, [...ids].reverse());

  assert.deepEqual(await client.files.delete(created.id), {
    id: created.id,
    object: "file",
    deleted: true,
  });
  const gone = await rejection(() => client.files.retrieve(created.id));
  assert.ok(gone instanceof OpenAI.NotFoundError);
  assert.equal(gone.param, "file_id");
  assert.ok(
    await rejection(() => client.files.content(created.id)) instanceof OpenAI.NotFoundError,
  );
  const entries = [];
  for await (const e of Deno.readDir(`${server.dataDir}/files`)) entries.push(e.name);
  assert.deepEqual(
    entries.sort(),
    ids.slice(1).sort(),
    "the bytes went with the record, no temp left",
  );

  const badPurpose = await rejection(async () =>
    client.files.create({ file: await toFile(bytes, "x.txt"), purpose: "everything" as never })
  );
  assert.equal(badPurpose.param, "purpose");
  const form = new FormData();
  form.set("purpose", "user_data");
  const noFile = await server.fetch("/v1/files", { method: "POST", body: form });
  assert.equal(noFile.status, 400);
  assert.equal((await noFile.json()).error.param, "file");
});

Deno.test("files: idempotent create, and a per-endpoint body limit larger than JSON's", async () => {
  await using server = await startAgentsServer({
    policy: { endpoints: { agents: true, agents_files_create: { limits: { body_bytes: 4096 } } } },
  });
  const { client } = server;
  const headers = { "Idempotency-Key": "upload-1" };
  const first = await client.files.create({
    file: await toFile(new Uint8Array(10), "a.bin"),
    purpose: "user_data",
  }, { headers });
  const again = await client.files.create({
    file: await toFile(new Uint8Array(10), "a.bin"),
    purpose: "user_data",
  }, { headers });
  assert.deepEqual(again, first);
  const other = await rejection(async () =>
    client.files.create({ file: await toFile(new Uint8Array(11), "a.bin"), purpose: "user_data" }, {
      headers,
    })
  );
  assert.ok(other instanceof OpenAI.ConflictError);
  assert.equal((await client.files.list()).data.length, 1);

  const tooBig = await rejection(async () =>
    client.files.create({
      file: await toFile(new Uint8Array(8192), "big.bin"),
      purpose: "user_data",
    })
  );
  assert.equal(tooBig.status, 413);
  const caps = await (await server.fetch("/capabilities")).json();
  assert.equal(caps.endpoints.agents_files_create.limits.body_bytes, 4096, "the policy's override");
});

Deno.test("files: the upload limit is 512 MiB by default, JSON bodies keep 10 MiB", async () => {
  await using server = await startAgentsServer();
  const caps = await (await server.fetch("/capabilities")).json();
  assert.equal(caps.endpoints.agents_files_create.limits.body_bytes, 512 * 1024 * 1024);
  assert.equal(caps.endpoints.agents_create.limits.body_bytes, 10 * 1024 * 1024);
});

Deno.test("files: a 256 MiB upload streams to disk without growing the server's memory", async () => {
  await using server = await startAgentsServer();
  // The launcher's child is the process that serves, under the production flags.
  const child = Deno.readTextFileSync(`/proc/${server.pid}/task/${server.pid}/children`).trim();
  const status = () => Deno.readTextFileSync(`/proc/${child}/status`);
  const rssKiB = () => Number(/VmRSS:\s+(\d+)/.exec(status())![1]);
  const before = rssKiB();
  const size = 256 * 1024 * 1024;
  const chunk = new Uint8Array(1024 * 1024).fill(97);
  const boundary = "sandbar-test-boundary";
  const head = new TextEncoder().encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nuser_data\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n` +
      `Content-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = new TextEncoder().encode(`\r\n--${boundary}--\r\n`);
  let sent = 0;
  let peak = before;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(head);
    },
    pull(c) {
      if (sent >= size) {
        c.enqueue(tail);
        c.close();
        return;
      }
      c.enqueue(chunk);
      sent += chunk.length;
      if (sent % (32 * 1024 * 1024) === 0) peak = Math.max(peak, rssKiB());
    },
  });
  const res = await server.fetch("/v1/files", {
    method: "POST",
    headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
    body,
  });
  assert.equal(res.status, 200, await res.clone().text());
  const file = await res.json();
  assert.equal(file.bytes, size);
  peak = Math.max(peak, rssKiB());
  // Buffers not yet collected come and go; holding the upload would take 256 MiB or more.
  assert.ok(
    peak - before < 96 * 1024,
    `RSS grew by ${(peak - before) >> 10} MiB for a 256 MiB upload`,
  );
  assert.equal((await Deno.stat(`${server.dataDir}/files/${file.id}`)).size, size);
});
