/**
 * Run a program under the TCP-only seccomp filter (`seccomp_filter.ts`):
 * `deno run --allow-ffi exec_tcp_only.ts <program> [args…]` sets `no_new_privs`, installs the
 * filter and `execv`s the program in place of this process (same pid, environment and
 * descriptors, so puppeteer's DevTools pipe on descriptors 3 and 4 passes through). The filter
 * is inherited by every process the program starts and cannot be removed. Deno cannot run code
 * between `fork` and `exec` in a child, so this small process is the step in between.
 *
 * With `SANDBAR_BROWSER_LANDLOCK` set (the rules of `Confinements.browser`), it first restricts
 * itself with Landlock, which the program inherits too: puppeteer starts Chromium, so no spawner
 * thread of the server's can, and this is the one place that runs before Chromium does. The
 * variable is removed before the `execv`.
 *
 * Exits with 126 (and a message on stderr) when the filter or the Landlock rules cannot be
 * installed, so the browser never starts without them.
 *
 * @module
 */

import { type PathRule, restrictThisThread } from "../confine/landlock.ts";
import { tcpOnlyFilter } from "./seccomp_filter.ts";

/** The variable that carries the Landlock rules (JSON: `{ rules, closedPorts }`). */
export const LANDLOCK_ENV = "SANDBAR_BROWSER_LANDLOCK";

const PR_SET_NO_NEW_PRIVS = 38;
const PR_SET_SECCOMP = 22;
const SECCOMP_MODE_FILTER = 2;

function fail(message: string): never {
  console.error(`sandbar: cannot confine the browser: ${message}`);
  Deno.exit(126);
}

function cString(s: string): Uint8Array<ArrayBuffer> {
  const bytes = new TextEncoder().encode(s);
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}

if (import.meta.main) {
  const [program, ...args] = Deno.args;
  if (!program) fail("no program given");
  // The file rules first: Chromium (and every process it starts) can then read the system,
  // write its own directory alone and connect to no port of the server's.
  const landlock = Deno.env.get(LANDLOCK_ENV);
  if (landlock !== undefined) {
    Deno.env.delete(LANDLOCK_ENV);
    try {
      const { rules, closedPorts } = JSON.parse(landlock) as {
        rules: PathRule[];
        closedPorts: number[];
      };
      restrictThisThread(rules, closedPorts);
    } catch (e) {
      fail(`Landlock: ${(e as Error).message}`);
    }
  }
  const filter = tcpOnlyFilter();
  if (!filter) fail(`no filter for ${Deno.build.os}/${Deno.build.arch}`);
  const lib = Deno.dlopen("libc.so.6", {
    prctl: { parameters: ["i32", "u64", "buffer", "u64", "u64"], result: "i32" },
    execv: { parameters: ["buffer", "buffer"], result: "i32" },
  });
  // struct sock_fprog: unsigned short len, then (aligned) the pointer to the entries.
  const prog = new BigUint64Array(2);
  prog[0] = BigInt(filter.length / 8);
  prog[1] = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(filter)));
  if (lib.symbols.prctl(PR_SET_NO_NEW_PRIVS, 1n, null, 0n, 0n) !== 0) fail("no_new_privs");
  const progBytes = new Uint8Array(prog.buffer);
  if (lib.symbols.prctl(PR_SET_SECCOMP, BigInt(SECCOMP_MODE_FILTER), progBytes, 0n, 0n) !== 0) {
    fail("seccomp");
  }
  const strings = [program, ...args].map(cString);
  const argv = new BigUint64Array(strings.length + 1);
  strings.forEach((s, i) => argv[i] = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(s))));
  lib.symbols.execv(strings[0], new Uint8Array(argv.buffer));
  fail(`execv ${program} failed`);
}
