// A small file replaced whole or not at all: written to a temp name beside it, fsynced, renamed over
// it. A crash leaves the old file or the new one, never half of either. A full disk is said as such
// (DISK_FULL, naming the file), not as an internal error.
import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { diskFullError, isNoRoom } from '../engine/errors.js';

export async function writeFileAtomic(file: string, text: string, mode: number): Promise<void> {
  try {
    await replace(file, text, mode);
  } catch (error) {
    if (isNoRoom(error)) throw diskFullError(`${file} could not be written`, error, { path: file });
    throw error;
  }
}

async function replace(file: string, text: string, mode: number): Promise<void> {
  const temp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  const handle = await open(temp, 'w', mode);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } catch (error) {
    // A full disk (ENOSPC) left the temp file behind, empty or short, at each try.
    await handle.close().catch(() => undefined);
    await rm(temp, { force: true });
    throw error;
  }
  await handle.close();
  await rename(temp, file).catch(async (error: unknown) => {
    await rm(temp, { force: true });
    throw error;
  });
}
