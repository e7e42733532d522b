/**
 * One inotify instance for the whole server, shared by every recursive watch, read without a
 * thread: the descriptor is non-blocking and drained on a timer while anyone listens.
 *
 * `Deno.watchFs(path, { recursive: true })` cannot be used for a tree: it adds its watches in
 * one synchronous call on the JavaScript thread and follows links while doing so, so a tree
 * holding a link to `/` blocks every request for minutes and reports changes outside the tree.
 * Here each directory is added by the caller, one at a time, with `IN_DONT_FOLLOW |
 * IN_ONLYDIR` (a link is never watched through), and the caller decides the pace.
 *
 * Linux only (null elsewhere, or without FFI permission). Constants are the generic ABI's
 * (x86_64 and aarch64 agree).
 *
 * @module
 */

import { lazyLibc } from "../libc/lazy.ts";
import { cString, errno, errnoName } from "./libc.ts";
import type { Service } from "../state.ts";

/** Event bits of `inotify(7)`. */
export const IN = {
  MODIFY: 0x2,
  ATTRIB: 0x4,
  MOVED_FROM: 0x40,
  MOVED_TO: 0x80,
  CREATE: 0x100,
  DELETE: 0x200,
  DELETE_SELF: 0x400,
  MOVE_SELF: 0x800,
  Q_OVERFLOW: 0x4000,
  IGNORED: 0x8000,
  ONLYDIR: 0x01000000,
  DONT_FOLLOW: 0x02000000,
  ISDIR: 0x40000000,
} as const;

/** What a tree watch asks for on every directory. */
export const TREE_MASK = IN.MODIFY | IN.ATTRIB | IN.MOVED_FROM | IN.MOVED_TO | IN.CREATE |
  IN.DELETE | IN.DELETE_SELF | IN.ONLYDIR | IN.DONT_FOLLOW;

/** How often the shared descriptor is drained while someone listens. */
export const DRAIN_EVERY_MS = 50;

const IN_NONBLOCK = 0o4000;
const IN_CLOEXEC = 0o2000000;

const SYMBOLS = {
  inotify_init1: { parameters: ["i32"], result: "i32" },
  inotify_add_watch: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  inotify_rm_watch: { parameters: ["i32", "i32"], result: "i32" },
  read: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  close: { parameters: ["i32"], result: "i32" },
} as const;

type Inotify = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

const load: () => Inotify | null = lazyLibc(SYMBOLS);

/** One raw event: the watch it came from, its bits, the rename cookie, the entry's name. */
export interface RawEvent {
  /** Watch descriptor. */
  wd: number;
  /** `IN_*` bits. */
  mask: number;
  /** Pairs `IN_MOVED_FROM` with `IN_MOVED_TO`. */
  cookie: number;
  /** The entry in the watched directory; `""` for the directory itself. */
  name: string;
}

/** Receives the events of the watches it added, one read's batch at a time. */
export interface InotifyListener {
  /** Events, in kernel order; a rename's two halves are in the same batch when both fit. */
  events(batch: RawEvent[]): void;
}

/** `inotify_add_watch` failed: `ENOSPC` means the user's watch limit was reached. */
export class WatchError extends Error {
  /** The errno name. */
  readonly code: string;

  /** An error for `path`. */
  constructor(path: string, code: string) {
    super(`inotify_add_watch(${path}) failed: ${code}`);
    this.code = code;
  }
}

/**
 * The server's inotify instance. Watches are counted per listener, so two watches of the same
 * directory share the kernel's watch, which is removed when the last one lets go.
 */
export class InotifyHub implements Service {
  readonly #lib: Inotify;
  #fd = -1;
  #timer: ReturnType<typeof setInterval> | undefined;
  /** wd → listener → how many times that listener added it. */
  readonly #watches = new Map<number, Map<InotifyListener, number>>();
  readonly #buf = new Uint8Array(64 * 1024);
  readonly #decoder = new TextDecoder();

  private constructor(lib: Inotify) {
    this.#lib = lib;
  }

  /** The hub, or null where inotify cannot be used here. */
  static create(): InotifyHub | null {
    const lib = load();
    return lib ? new InotifyHub(lib) : null;
  }

  #open(): void {
    if (this.#fd >= 0) return;
    const fd = this.#lib.inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) throw new WatchError("inotify_init1", errnoName(errno()));
    this.#fd = fd;
    this.#timer = setInterval(() => this.drain(), DRAIN_EVERY_MS);
  }

  /** Watch the directory at `path` (never through a link) for `listener`; its wd. */
  add(listener: InotifyListener, path: string): number {
    this.#open();
    const wd = this.#lib.inotify_add_watch(this.#fd, cString(path), TREE_MASK);
    if (wd < 0) {
      const code = errnoName(errno());
      this.#closeIfUnused();
      throw new WatchError(path, code);
    }
    let users = this.#watches.get(wd);
    if (!users) this.#watches.set(wd, users = new Map());
    users.set(listener, (users.get(listener) ?? 0) + 1);
    return wd;
  }

  /** Let go of one `add` of `wd` by `listener`. */
  release(listener: InotifyListener, wd: number): void {
    const users = this.#watches.get(wd);
    const n = users?.get(listener);
    if (!users || n === undefined) return;
    if (n > 1) users.set(listener, n - 1);
    else users.delete(listener);
    if (users.size === 0) {
      this.#watches.delete(wd);
      this.#lib.inotify_rm_watch(this.#fd, wd);
    }
    this.#closeIfUnused();
  }

  /** Let go of every watch of `listener`. */
  releaseAll(listener: InotifyListener): void {
    for (const [wd, users] of [...this.#watches]) {
      if (!users.has(listener)) continue;
      users.delete(listener);
      if (users.size === 0) {
        this.#watches.delete(wd);
        this.#lib.inotify_rm_watch(this.#fd, wd);
      }
    }
    this.#closeIfUnused();
  }

  /** How many kernel watches are held. */
  get size(): number {
    return this.#watches.size;
  }

  #closeIfUnused(): void {
    if (this.#watches.size > 0 || this.#fd < 0) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#lib.close(this.#fd);
    this.#fd = -1;
  }

  /** Read what the kernel has queued (never blocks) and hand it to the listeners. */
  drain(): void {
    if (this.#fd < 0) return;
    const batches = new Map<InotifyListener, RawEvent[]>();
    while (true) {
      const n = Number(this.#lib.read(this.#fd, this.#buf, BigInt(this.#buf.length)));
      if (n <= 0) break; // EAGAIN: nothing more for now
      const view = new DataView(this.#buf.buffer, 0, n);
      for (let off = 0; off + 16 <= n;) {
        const wd = view.getInt32(off, true);
        const mask = view.getUint32(off + 4, true);
        const cookie = view.getUint32(off + 8, true);
        const len = view.getUint32(off + 12, true);
        const raw = this.#buf.subarray(off + 16, off + 16 + len);
        const end = raw.indexOf(0);
        const name = this.#decoder.decode(end === -1 ? raw : raw.subarray(0, end));
        off += 16 + len;
        const event = { wd, mask, cookie, name };
        for (const listener of this.#watches.get(wd)?.keys() ?? []) {
          let batch = batches.get(listener);
          if (!batch) batches.set(listener, batch = []);
          batch.push(event);
        }
        if (mask & IN.IGNORED) this.#forget(wd);
      }
    }
    for (const [listener, batch] of batches) listener.events(batch);
    this.#closeIfUnused();
  }

  /** The kernel dropped `wd` (its directory is gone). */
  #forget(wd: number): void {
    this.#watches.delete(wd);
  }

  /** Close the instance (the server is stopping). */
  close(): void {
    this.#watches.clear();
    this.#closeIfUnused();
  }
}
