/**
 * File checks the tests share: whether a path exists (what a security test asserts a confined
 * process did not create, or did not reach).
 *
 * @module
 */

/** Whether `path` exists (a dangling symlink does not: the check follows links). */
export function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}
