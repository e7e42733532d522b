// The system group runs helper programs of the server's own (df, grep, sh, python3 -I), confined
// but with all of /proc: a PATH set through POST /system/env must not choose them. Judged by marker
// files that impostors on that PATH would write.
import assert from "node:assert/strict";
import { startTestServer } from "../helpers/server.ts";

Deno.test("a PATH set through /system/env never chooses the system group's helper programs", async () => {
  await using server = await startTestServer();
  const bin = `${server.root}/bin`;
  await Deno.mkdir(bin);
  for (const name of ["sh", "grep", "df", "python3", "uname", "ss", "dpkg-query", "npm", "node"]) {
    await Deno.writeTextFile(
      `${bin}/${name}`,
      `#!/bin/bash\ntouch ${server.root}/RAN-${name}\nexit 0\n`,
      { mode: 0o755 },
    );
  }
  const set = await server.post("/system/env", { env: { PATH: `${bin}:/usr/bin:/bin` } });
  assert.equal(set.status, 200, await set.text());
  // The store really holds it: a shell command finds the impostor first.
  const shell = await server.post("/process/shell", { cmd: "df >/dev/null; echo $?" });
  assert.equal((await shell.json()).stdout, "0\n");
  await Deno.remove(`${server.root}/RAN-df`);
  for (const path of ["/system/info", "/system/metrics", "/system/ports", "/system/packages"]) {
    const res = await server.fetch(path);
    assert.equal(res.status, 200, `${path}: ${await res.text()}`);
  }
  const ran = [...Deno.readDirSync(server.root)].map((e) => e.name).filter((n) =>
    n.startsWith("RAN-")
  );
  assert.deepEqual(ran, []);
});
