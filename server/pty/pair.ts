/**
 * Opening a pseudo-terminal pair and setting its size.
 *
 * The master is opened `O_NONBLOCK | O_CLOEXEC` (a shell must never inherit it; without
 * `O_CLOEXEC` every child would hold a ptmx descriptor). The server also opens the slave side
 * itself and holds it until the terminal is closed: while a slave descriptor is open the master
 * never reports a hang-up, so the time between opening the pair and the shell opening its side
 * is not mistaken for the end of the terminal; the end is the shell's exit status instead.
 *
 * @module
 */

import {
  closeFd,
  cString,
  libc,
  LibcError,
  O_CLOEXEC,
  O_NOCTTY,
  O_NONBLOCK,
  O_RDWR,
  TIOCGWINSZ,
  TIOCSWINSZ,
} from "../libc/index.ts";

/** An open pseudo-terminal pair. */
export interface PtyPair {
  /** The master descriptor (nonblocking): the server reads output and writes input here. */
  master: number;
  /** The server's own slave descriptor, held so the master never hangs up early. */
  slave: number;
  /** The slave's device path, `/dev/pts/N`, which the shell opens as its terminal. */
  path: string;
}

/** A window size. */
export interface WindowSize {
  /** Columns. */
  cols: number;
  /** Rows. */
  rows: number;
}

/**
 * Set the window size of a terminal (either side).
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { getWindowSize, openPtyPair, setWindowSize } from "./pair.ts";
 * import { closeFd } from "../libc/index.ts";
 * const pair = openPtyPair({ cols: 80, rows: 24 });
 * setWindowSize(pair.master, { cols: 132, rows: 40 });
 * assert.deepEqual(getWindowSize(pair.master), { cols: 132, rows: 40 });
 * closeFd(pair.slave);
 * closeFd(pair.master);
 * ```
 */
export function setWindowSize(fd: number, size: WindowSize): void {
  // struct winsize { unsigned short ws_row, ws_col, ws_xpixel, ws_ypixel; }
  const ws = new Uint16Array([size.rows, size.cols, 0, 0]);
  if (libc().ioctl(fd, TIOCSWINSZ, ws) !== 0) throw new LibcError("ioctl(TIOCSWINSZ)");
}

/**
 * The window size of a terminal.
 */
export function getWindowSize(fd: number): WindowSize {
  const ws = new Uint16Array(4);
  if (libc().ioctl(fd, TIOCGWINSZ, ws) !== 0) throw new LibcError("ioctl(TIOCGWINSZ)");
  return { rows: ws[0], cols: ws[1] };
}

/**
 * Open a pseudo-terminal pair of the given size. On failure nothing stays open.
 *
 * @example Usage
 * ```ts
 * import assert from "node:assert/strict";
 * import { getWindowSize, openPtyPair } from "./pair.ts";
 * import { closeFd } from "../libc/index.ts";
 * const pair = openPtyPair({ cols: 80, rows: 24 });
 * assert.match(pair.path, /^\/dev\/pts\/\d+$/);
 * assert.deepEqual(getWindowSize(pair.master), { cols: 80, rows: 24 });
 * closeFd(pair.slave);
 * closeFd(pair.master);
 * ```
 */
export function openPtyPair(size: WindowSize): PtyPair {
  const c = libc();
  const master = c.posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  if (master < 0) throw new LibcError("posix_openpt");
  let slave = -1;
  try {
    if (c.grantpt(master) !== 0) throw new LibcError("grantpt");
    if (c.unlockpt(master) !== 0) throw new LibcError("unlockpt");
    const name = new Uint8Array(128);
    const rc = c.ptsname_r(master, name, BigInt(name.length));
    if (rc !== 0) throw new LibcError("ptsname_r", rc);
    const path = new TextDecoder().decode(name.subarray(0, name.indexOf(0)));
    setWindowSize(master, size);
    slave = c.open(cString(path), O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK, 0);
    if (slave < 0) throw new LibcError(`open(${path})`);
    return { master, slave, path };
  } catch (e) {
    closeFd(slave);
    closeFd(master);
    throw e;
  }
}
