/**
 * What the tests read of processes from the host's `/proc`: a process's state and parents and
 * every pid (the SDK's one reader, `sdk/providers/local/procfs.ts`), and the narrowed server
 * behind a test server's launcher.
 *
 * @module
 */

import { allPids, procStat } from "../../sdk/providers/local/procfs.ts";
import type { TestServer } from "./server.ts";

export { allPids, type ProcStat, procStat } from "../../sdk/providers/local/procfs.ts";

/** The narrowed server: the child of the test server's launcher. */
export function serverPid(server: TestServer): number {
  const pid = allPids().find((p) => procStat(p)?.ppid === server.pid);
  if (pid === undefined) throw new Error("no server process");
  return pid;
}
