// fcntl OFD locks from the engine's addon (native/chunker/src/lock.c), for the home's claim
// (home-claim.ts). Node has no fcntl binding. Null where the addon is not built: the claim then relies
// on its lease alone.

import { createRequire } from 'node:module';
import { nativeChunkerPath } from '../engine/datasets/gear-chunker.js';

export const UNLOCK = 0;
export const SHARED = 1;
export const EXCLUSIVE = 2;

export interface LockAddon {
  /** 0, or an errno: EAGAIN when another holder conflicts; ENOLCK, EOPNOTSUPP ... where the filesystem does not lock */
  lockRange(fd: number, start: number, length: number, mode: number): number;
  /** 0 when a lock of `mode` could be taken now, EAGAIN when another holder conflicts, else an errno */
  lockTest(fd: number, start: number, length: number, mode: number): number;
}

let addon: LockAddon | null | undefined;

export function loadFileLocks(): LockAddon | null {
  if (addon !== undefined) return addon;
  addon = null;
  const path = nativeChunkerPath();
  if (path === null) return addon;
  try {
    const loaded = createRequire(import.meta.url)(path) as Partial<LockAddon>;
    if (typeof loaded.lockRange === 'function' && typeof loaded.lockTest === 'function') addon = loaded as LockAddon;
  } catch {
    // an addon that does not load: the lease alone
  }
  return addon;
}
