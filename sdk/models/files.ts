/**
 * Models of the file_ops group.
 *
 * @module
 */

/** `file` or `directory` (sockets, FIFOs and devices are `file`). */
export type FileType = "file" | "directory";

/** One file or directory. */
export interface FileInfo {
  /** Base name. */
  name: string;
  /** Absolute path, as asked (a link's path, not its target). */
  path: string;
  /** `file` or `directory` (of the target, for a link inside the allowed paths). */
  type: FileType;
  /** Size in bytes. */
  size: number;
  /** Permission bits (`0o644` is 420). */
  mode: number;
  /** Last modification, or null when the file system does not say. */
  modified: Date | null;
  /** Whether the entry itself is a symbolic link. */
  symlink: boolean;
  /** The link's text, for a link; else null. */
  symlinkTarget: string | null;
}

/** The kinds of change `files.watch` reports. */
export type WatchEventType = "create" | "modify" | "delete" | "rename";

/** One change seen by `files.watch`. */
export interface WatchEvent {
  /** What happened. */
  type: WatchEventType;
  /** The path changed (for a rename: the new path). */
  path: string;
  /** For a rename: the old path; else null. */
  from: string | null;
  /** When the server saw it. */
  time: Date | null;
}

/** One match of `files.search`. */
export interface SearchMatch {
  /** Absolute path. */
  path: string;
  /** Base name. */
  name: string;
  /** `file` or `directory`. */
  type: FileType;
  /** Size in bytes. */
  size: number;
  /** For a content match: the 1-based line; else null. */
  line: number | null;
  /** For a content match: the 1-based column; else null. */
  column: number | null;
  /** For a content match: the line (cut to 500 characters); else null. */
  text: string | null;
}

/** The answer of `files.search`. */
export interface SearchResult {
  /** The directory searched. */
  path: string;
  /** Matches: one per name match, one per matching line for content. */
  matches: SearchMatch[];
  /** True when `maxResults` was reached. */
  truncated: boolean;
  /** True when `timeoutMs` passed before the search ended. */
  timedOut: boolean;
  /** How many files were looked at. */
  filesScanned: number;
}

/** The answer of `files.mkdir`. */
export interface MkdirResult {
  /** Absolute path of the directory. */
  path: string;
  /** False when it already was a directory. */
  created: boolean;
}

/** The answer of `files.move`. */
export interface MoveResult {
  /** Absolute source path. */
  source: string;
  /** Absolute destination path. */
  destination: string;
}

/** The answer of `files.downloadFile`. */
export interface DownloadResult {
  /** The local file written. */
  path: string;
  /** Bytes written. */
  size: number;
}
