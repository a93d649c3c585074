// Project paths inside the mount: '' is the root, 'a/b' a file or directory below it. The kernel hands
// us '/a/b'; names the engine cannot store (control characters, backslashes, over-long names) are not
// versioned — they live in the backing directory like ignored files (see backing.ts).
import { normalizeProjectPath } from '../../engine/paths.js';

/**
 * '/a/b' → 'a/b'; '/' → ''. Never normalized: 'café' in NFC and in NFD are two names on every
 * Linux filesystem, so two files; folding one onto the other served one file's bytes under both
 * names. A name not in NFC is not versionable (isVersionable) and lives in the backing directory.
 */
export function fromFuse(path: string): string {
  return path === '/' ? '' : path.slice(1);
}

export function parentOf(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash === -1 ? '' : path.slice(0, slash);
}

export function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

export function joinPath(dir: string, name: string): string {
  return dir === '' ? name : `${dir}/${name}`;
}

/** The directories that contain `path`, innermost first, ending with the root ''. */
export function ancestorsOf(path: string): string[] {
  const out: string[] = [];
  let current = path;
  while (current !== '') {
    current = parentOf(current);
    out.push(current);
  }
  return out;
}

/** True when `path` is `dir` itself or below it. */
export function isWithin(path: string, dir: string): boolean {
  return dir === '' || path === dir || path.startsWith(`${dir}/`);
}

// Printable ASCII without backslash, in segments of 1–255 bytes that are not '.' or '..': what the
// engine accepts unchanged. Checked first because almost every path is like this.
const PLAIN = /^(?:(?!\.\.?(?:\/|$))[\x20-\x2e\x30-\x5b\x5d-\x7e]{1,255})(?:\/(?!\.\.?(?:\/|$))[\x20-\x2e\x30-\x5b\x5d-\x7e]{1,255})*$/;

/** Whether the engine can store this path (else it is kept unversioned in the backing directory). */
export function isVersionable(path: string): boolean {
  if (path.length <= 4096 && PLAIN.test(path)) return true;
  try {
    return normalizeProjectPath(path) === path;
  } catch {
    return false;
  }
}

/** libfuse renames a file that is unlinked while open to `.fuse_hiddenXXXX` and removes it at release. */
export function isFuseHidden(path: string): boolean {
  return baseName(path).startsWith('.fuse_hidden');
}
