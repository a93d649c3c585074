// Moving an entry between the in-place directory and the mount's backing directory (which lives inside
// it, `.strata/unversioned`): one rename on the same filesystem, atomic, whatever the size of a `.git`.
// Both ends are open directories (dir-handle.ts), so neither side follows a link on the way.
import { lstat, rename } from 'node:fs/promises';
import type { DirHandle } from './dir-handle.js';
import { isGone } from './dir-handle.js';

export type MoveOutcome = 'moved' | 'gone' | 'skipped';

export interface MoveInput {
  from: DirHandle;
  to: DirHandle;
  name: string;
  /** project path of the entry (for the displaced copy's place) */
  path: string;
  /**
   * Where an entry already at the destination goes instead of being overwritten (rename(2) would
   * replace a file, and an empty directory): the directory that will hold it, created on demand.
   */
  displace: (path: string) => Promise<DirHandle>;
}

/**
 * Renames `from/name` to `to/name`. Something already there — only after a crash left the same entry
 * on both sides, or the user made it anew meanwhile — is moved aside first, never lost. 'skipped' when
 * the two are on different filesystems (a mount point inside the project): it stays where it is.
 */
export async function moveEntry(input: MoveInput): Promise<MoveOutcome> {
  const { from, to, name } = input;
  const target = to.entry(name);
  if (await exists(target)) {
    const aside = await input.displace(input.path);
    try {
      await rename(target, aside.entry(name));
    } finally {
      await aside.close();
    }
  }
  try {
    await rename(from.entry(name), target);
    return 'moved';
  } catch (error) {
    if (isGone(error)) return 'gone';
    const code = (error as NodeJS.ErrnoException).code;
    // EXDEV: another filesystem below the project; EBUSY: the entry is a mount point itself.
    if (code === 'EXDEV' || code === 'EBUSY') return 'skipped';
    throw error;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    if (isGone(error)) return false;
    throw error;
  }
}
