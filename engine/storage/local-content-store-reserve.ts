// `<root>/reserve`: a few MiB of zeros the store keeps for the one moment it needs space it may not
// have — freeing space on a full disk. Deleting an object writes to the pack index first (SQLite needs
// room for its log, even for a row that frees a loose file), so `strata gc` on a full home failed
// with "database or disk is full" and freed nothing: the user's one way to free space inside Strata
// needed free space. Collection releases the reserve when the store reports a full disk and retries;
// the reserve is made again once there is room (never by taking the last free space of the disk).
import { open, rm, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { isNotFound } from './local-content-store-loose.js';

export const RESERVE_BYTES = 8 << 20;
const WRITE_BYTES = 1 << 20;

export function reservePath(root: string): string {
  return join(root, 'reserve');
}

/**
 * Creates the reserve if it is missing or short and the filesystem has room for it twice over. Never
 * throws: a home without its reserve works as before, only a full disk then cannot be collected.
 */
export async function keepReserve(root: string): Promise<boolean> {
  const path = reservePath(root);
  try {
    const handle = await open(path, 'a+');
    try {
      const { size } = await handle.stat();
      if (size >= RESERVE_BYTES) return true;
      const fs = await statfs(root);
      if (fs.bavail * fs.bsize < 2 * (RESERVE_BYTES - size)) return false;
      // Written, not ftruncated: a sparse file holds no blocks, and holding blocks is its whole point.
      const zeros = Buffer.alloc(WRITE_BYTES);
      for (let at = size; at < RESERVE_BYTES; at += WRITE_BYTES) {
        await handle.write(zeros, 0, Math.min(WRITE_BYTES, RESERVE_BYTES - at), at);
      }
      await handle.sync();
      return true;
    } finally {
      await handle.close();
    }
  } catch {
    // ENOSPC meanwhile, a read-only home: give the blocks back rather than keep a short file.
    await rm(path, { force: true }).catch(() => undefined);
    return false;
  }
}

/** Removes the reserve; true if there was one to give back. */
export async function releaseReserve(root: string): Promise<boolean> {
  try {
    await rm(reservePath(root));
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}
