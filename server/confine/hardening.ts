/**
 * Keeping the server's secrets from the processes it starts. Those processes may run as the
 * same user as the server, and a same-user process can read another's `/proc/<pid>/environ`
 * (where the token the server started with still stands, whatever `unsetenv` did since) and
 * attach to it, unless the process is marked non-dumpable. `prctl(PR_SET_DUMPABLE, 0)` does
 * that: its `/proc` files become root's and ptrace is refused. It lasts until the process execs,
 * so the children the server starts are dumpable as usual.
 *
 * @module
 */

import { libcPart } from "../libc/index.ts";

/** The calls hardening makes, bound alone: the launcher needs no more of libc. */
const hardening = libcPart(["prctl", "environ", "opendir", "readdir", "closedir", "fcntl"]);

const PR_SET_DUMPABLE = 4;

/**
 * Mark this process non-dumpable. Returns false where that is not possible (not Linux, no FFI).
 */
export function hideFromSameUser(): boolean {
  const c = hardening();
  return c !== null && c.prctl(PR_SET_DUMPABLE, 0n, 0n, 0n, 0n) === 0;
}

/** Entries shorter than this are never taken for a secret's value. */
const MIN_SECRET_LENGTH = 8;

/**
 * Remove the variables `names` from this process's environment and overwrite their bytes where
 * the kernel shows them. `unsetenv` only drops a pointer: the `NAME=value` text stays in the
 * environment block the process started with, and `/proc/<pid>/environ` prints that block to
 * any process of the same user (non-dumpable or not, on the kernels measured). So every entry
 * of `environ` that names one of `names`, or holds one of their values (a token copied into
 * another variable), is zeroed first, then the variables are unset. Returns how many entries
 * it zeroed (0 where libc cannot be reached; the variables are unset all the same).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { forgetSecretVariables } from "./hardening.ts";
 * Deno.env.set("EXAMPLE_SECRET", "s3cret-value-123");
 * forgetSecretVariables(["EXAMPLE_SECRET"]);
 * assert.equal(Deno.env.get("EXAMPLE_SECRET"), undefined);
 * ```
 */
export function forgetSecretVariables(names: Iterable<string>): number {
  const wanted = new Set(names);
  const values = [...wanted].map((n) => Deno.env.get(n) ?? "").filter((v) =>
    v.length >= MIN_SECRET_LENGTH
  );
  // Found first and zeroed after the unset, so that `environ` keeps no emptied entry.
  const found: Uint8Array[] = [];
  const c = hardening();
  if (c !== null) {
    const address = c.environ;
    const table = address === null ? null : new Deno.UnsafePointerView(address).getPointer(0);
    const entries = table === null ? null : new Deno.UnsafePointerView(table);
    for (let i = 0; entries !== null; i++) {
      const entry = entries.getPointer(i * 8);
      if (entry === null) break;
      const text = Deno.UnsafePointerView.getCString(entry);
      const name = text.slice(0, text.indexOf("="));
      if (!wanted.has(name) && !values.some((v) => text.includes(v))) continue;
      wanted.add(name); // a copy of a secret in another variable goes with it
      const length = new TextEncoder().encode(text).length;
      found.push(new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(entry, length)));
    }
  }
  for (const name of wanted) Deno.env.delete(name);
  for (const bytes of found) bytes.fill(0);
  return found.length;
}

const F_GETFD = 1;
const F_SETFD = 2;
const FD_CLOEXEC = 1;

/**
 * Mark every descriptor this process inherited (3 and up) close-on-exec, so that no process
 * the server starts, by any path (`posix_spawn`, `Deno.Command`, the terminals), receives one:
 * a launching shell may leave a secret open on descriptor 7 without `O_CLOEXEC`. The native
 * spawn also closes everything from 3 up in the child; this covers the other paths. Listed
 * through libc, as the narrowed server may not read `/proc/self/fd` itself. Returns how many
 * descriptors it marked.
 *
 * @example
 * ```ts ignore
 * import { closeInheritedOnExec } from "./hardening.ts";
 * closeInheritedOnExec();
 * ```
 */
export function closeInheritedOnExec(): number {
  const c = hardening();
  if (c === null) return 0;
  const dir = c.opendir(new TextEncoder().encode("/proc/self/fd\0"));
  if (dir === null) return 0;
  const fds: number[] = [];
  try {
    for (;;) {
      const entry = c.readdir(dir);
      if (entry === null) break;
      // struct dirent64: d_name at offset 19.
      const name = new Deno.UnsafePointerView(entry).getCString(19);
      if (/^\d+$/.test(name) && Number(name) > 2) fds.push(Number(name));
    }
  } finally {
    c.closedir(dir);
  }
  let marked = 0;
  for (const fd of fds) {
    const flags = c.fcntl(fd, F_GETFD, 0);
    if (flags >= 0 && !(flags & FD_CLOEXEC) && c.fcntl(fd, F_SETFD, flags | FD_CLOEXEC) === 0) {
      marked++;
    }
  }
  return marked;
}
