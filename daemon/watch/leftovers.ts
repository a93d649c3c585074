// What a crash in the middle of bringing a file to disk leaves (materialize.ts): a file is written
// whole as `.strata/incoming/<random>.part` and renamed into place, a link is made as
// `.strata-incoming-<random>` next to its path and renamed over it. A daemon killed between the two
// steps (kill -9 three seconds into a 1.4 GB restore left a 631 MB `.part`) leaves the temp behind,
// and nothing else would ever remove it: capture ignores both names. The next start puts the path
// right again (the engine still wants it), so the temps are only garbage.
//
// Swept when a watch project starts, before its catch-up scan and before anything is brought to disk
// again (incoming.ts starts after that scan): only the daemon holding the home lock writes either
// name, and at that point it has nothing of its own in flight for the project. Mount mode never uses
// `.strata/incoming` (its in-place backing is `.strata/unversioned`).
import { lstat, unlink } from 'node:fs/promises';
import { openBeneath } from '../beneath.js';
import { INCOMING_TEMP_PREFIX } from '../capture/ignore.js';
import { INCOMING_DIR } from './materialize.js';

export interface Swept {
  files: number;
  bytes: number;
}

/**
 * Empties the project's `.strata/incoming/` of files and links (all of them temps of an interrupted
 * write). Reached without following links; a directory there is not ours and stays.
 */
export async function sweepIncoming(root: string): Promise<Swept> {
  const swept: Swept = { files: 0, bytes: 0 };
  const incoming = await openBeneath(root, INCOMING_DIR, { create: false });
  if (incoming.kind !== 'dir') return swept;
  try {
    for (const name of await incoming.dir.list()) {
      const entry = incoming.dir.entry(name);
      const st = await lstat(entry).catch(() => null);
      if (st === null || st.isDirectory()) continue;
      try {
        await unlink(entry);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw error;
      }
      swept.files += 1;
      swept.bytes += st.size;
    }
  } finally {
    await incoming.dir.close();
  }
  return swept;
}

/** A name materialize.ts gives a link while it is being made. */
export function isLinkTemp(path: string): boolean {
  return path.startsWith(INCOMING_TEMP_PREFIX, path.lastIndexOf('/') + 1);
}

/**
 * Removes the link temp at `path` (project-relative) if it is a symbolic link; a file the user named
 * so is left alone (it is ignored, not ours). True when it was removed.
 */
export async function removeLinkTemp(root: string, path: string): Promise<boolean> {
  const slash = path.lastIndexOf('/');
  const parent = await openBeneath(root, slash === -1 ? '' : path.slice(0, slash), { create: false });
  if (parent.kind !== 'dir') return false;
  try {
    const entry = parent.dir.entry(path.slice(slash + 1));
    const st = await lstat(entry).catch(() => null);
    if (st === null || !st.isSymbolicLink()) return false;
    await unlink(entry).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
    return true;
  } finally {
    await parent.dir.close();
  }
}
