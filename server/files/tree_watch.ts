/**
 * Watching a directory tree through the server's shared inotify instance (`inotify.ts`):
 * every directory of the tree is found by the link-free walk of `tree_walk.ts` and watched on
 * its own, never through a link, a few hundred at a time with the event loop served in
 * between, so a huge tree (or one holding a link to `/`) neither blocks the server nor reaches
 * outside. Directories created or moved in later are added the same way; one moved out or
 * deleted is let go at once, so nothing outside the tree is reported.
 *
 * @module
 */

import { join } from "node:path";
import { ApiError } from "../errors.ts";
import { IN, type InotifyHub, type InotifyListener, type RawEvent, WatchError } from "./inotify.ts";
import { walkTree } from "./tree_walk.ts";

/** Most directories one recursive watch may hold (each is a kernel watch). */
export const MAX_WATCHED_DIRECTORIES = 16_384;

/** Directories added between two turns of the event loop. */
const DIRECTORIES_PER_TURN = 256;

/** One change, as the tree watch reports it (real paths, under the tree). */
export type TreeChange =
  | { type: "create" | "modify" | "delete"; path: string }
  | { type: "rename"; path: string; from: string };

/** Options of {@linkcode TreeWatch}. */
export interface TreeWatchOptions {
  /** The real, link-free path of the tree's root directory. */
  root: string;
  /** Leave out an entry (and, for a directory, what is below it), by its real path. */
  hide: (real: string) => boolean;
  /** Refuse a link in the root's path while walking (`paths.symlinks` is not `allow`). */
  noSymlinks: boolean;
  /** Receives the changes. */
  onChange: (change: TreeChange) => void;
}

const turn = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/**
 * The watches of one tree.
 */
export class TreeWatch implements InotifyListener {
  readonly #hub: InotifyHub;
  readonly #options: TreeWatchOptions;
  /** wd → the directory's path relative to the root (`""` for the root). */
  readonly #dirs = new Map<number, string>();
  #closed = false;

  /** A watch of `options.root`; nothing is watched before {@linkcode start}. */
  constructor(hub: InotifyHub, options: TreeWatchOptions) {
    this.#hub = hub;
    this.#options = options;
  }

  /** Watch every directory of the tree; `ApiError` when the tree is too large to watch. */
  async start(): Promise<void> {
    try {
      await this.#addTree("");
    } catch (e) {
      this.close();
      if (e instanceof WatchError && e.code === "ENOSPC") {
        throw new ApiError(
          "conflict",
          "The system's inotify watch limit (fs.inotify.max_user_watches) is reached; watch a " +
            "smaller directory or with recursive=false",
          { param: "path", cause: e },
        );
      }
      throw e;
    }
  }

  #real(rel: string): string {
    return rel === "" ? this.#options.root : join(this.#options.root, rel);
  }

  /**
   * Add `rel` and every directory below it, pacing the walk. With `report`, every entry found
   * below `rel` is reported as created: it appeared after the watch began (in a directory made
   * or moved in since), before its directory could be watched.
   */
  async #addTree(rel: string, report = false): Promise<void> {
    const walk = walkTree(this.#real(rel), {
      maxDepth: Infinity,
      includeRoot: true,
      noSymlinks: this.#options.noSymlinks,
      include: (e) => (report || e.stat.kind === "directory") && !this.#options.hide(e.path),
    });
    let sinceTurn = 0;
    for await (const entry of walk) {
      if (this.#closed) return;
      if (report && entry.rel !== "") this.#options.onChange({ type: "create", path: entry.path });
      if (entry.stat.kind !== "directory") continue;
      const dirRel = entry.rel === "" ? rel : rel === "" ? entry.rel : `${rel}/${entry.rel}`;
      if (this.#dirs.size >= MAX_WATCHED_DIRECTORIES) {
        throw new ApiError(
          "invalid_arguments",
          `The tree has more than ${MAX_WATCHED_DIRECTORIES} directories; watch a smaller ` +
            "directory or with recursive=false",
          { param: "recursive" },
        );
      }
      let wd: number;
      try {
        wd = this.#hub.add(this, entry.path);
      } catch (e) {
        // Gone or swapped for a link since the walk saw it: nothing to watch there.
        if (e instanceof WatchError && e.code !== "ENOSPC") continue;
        throw e;
      }
      if (this.#dirs.has(wd)) this.#hub.release(this, wd); // already held
      this.#dirs.set(wd, dirRel);
      if (++sinceTurn >= DIRECTORIES_PER_TURN) {
        sinceTurn = 0;
        await turn();
      }
    }
  }

  /** A directory that appeared later (created or moved in): watched in the background. */
  #addLater(rel: string): void {
    this.#addTree(rel, true).catch(() => {/* over the limit or gone: what was added stays */});
  }

  /** Let go of `rel` and everything below it. */
  #drop(rel: string): void {
    for (const [wd, r] of [...this.#dirs]) {
      if (r === rel || r.startsWith(`${rel}/`)) {
        this.#dirs.delete(wd);
        this.#hub.release(this, wd);
      }
    }
  }

  /** Move the watches of `from` (and below) to `to`. */
  #renameDirs(from: string, to: string): void {
    for (const [wd, r] of this.#dirs) {
      if (r === from) this.#dirs.set(wd, to);
      else if (r.startsWith(`${from}/`)) this.#dirs.set(wd, to + r.slice(from.length));
    }
  }

  /** {@inheritDoc InotifyListener.events} */
  events(batch: RawEvent[]): void {
    if (this.#closed) return;
    const { onChange, hide } = this.#options;
    const moved = new Map<number, { rel: string; dir: boolean }>();
    const emit = (type: "create" | "modify" | "delete", rel: string) => {
      const path = this.#real(rel);
      if (!hide(path)) onChange({ type, path });
    };
    for (const e of batch) {
      const dirRel = this.#dirs.get(e.wd);
      if (dirRel === undefined) continue;
      if (e.mask & IN.IGNORED) {
        this.#dirs.delete(e.wd);
        continue;
      }
      if (e.name === "") {
        if (e.mask & IN.DELETE_SELF && dirRel === "") emit("delete", "");
        continue;
      }
      const rel = dirRel === "" ? e.name : `${dirRel}/${e.name}`;
      const isDir = (e.mask & IN.ISDIR) !== 0;
      if (e.mask & IN.CREATE) {
        emit("create", rel);
        if (isDir) this.#addLater(rel);
      } else if (e.mask & (IN.MODIFY | IN.ATTRIB)) {
        if (!isDir) emit("modify", rel);
      } else if (e.mask & IN.DELETE) {
        emit("delete", rel);
      } else if (e.mask & IN.MOVED_FROM) {
        moved.set(e.cookie, { rel, dir: isDir });
      } else if (e.mask & IN.MOVED_TO) {
        const from = moved.get(e.cookie);
        if (from) {
          moved.delete(e.cookie);
          if (from.dir) this.#renameDirs(from.rel, rel);
          const path = this.#real(rel);
          const old = this.#real(from.rel);
          if (!hide(path) && !hide(old)) onChange({ type: "rename", path, from: old });
          else if (!hide(path)) onChange({ type: "create", path });
          else if (!hide(old)) onChange({ type: "delete", path: old });
        } else {
          emit("create", rel); // moved in from outside the tree
          if (isDir) this.#addLater(rel);
        }
      }
    }
    // Moved out of the tree: a delete here, and its watches must not report from outside.
    for (const { rel, dir } of moved.values()) {
      if (dir) this.#drop(rel);
      emit("delete", rel);
    }
  }

  /** How many directories are watched. */
  get size(): number {
    return this.#dirs.size;
  }

  /** Let go of every watch. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#dirs.clear();
    this.#hub.releaseAll(this);
  }
}
