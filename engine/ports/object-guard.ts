import type { ContentHash } from '../types.js';

/**
 * Coordinates the writers and the collectors of a content store that several processes share (server
 * replicas over one bucket), which the engine's in-process GC lock (rw-lock.ts) cannot see.
 *
 * A writer touches a hash before it asks the store whether the object exists (and so before it
 * deduplicates against it); a collector deletes only through `collect`, which is atomic with respect
 * to `touch`. Either the collector decided first, and then the object is gone when the writer looks
 * and the writer stores it again, or the writer touched first, and the collector spares the object
 * for the grace period — long enough for the writer's record to commit and reference it.
 */
export interface ObjectGuard {
  /**
   * Records the touch; returns the hashes the guard had no record of (never written through a guard,
   * or collected since): their objects are not in the store, unless they were put there without a
   * guard (a storage migration), in which case storing them again writes the same bytes.
   */
  touch(hashes: readonly ContentHash[]): Promise<Set<ContentHash>>;
  /**
   * Runs `remove` unless the object was touched within `graceMs` (on the guard's clock, the
   * database's) or something references it; true if it removed it.
   */
  collect(hash: ContentHash, graceMs: number, remove: () => Promise<void>): Promise<boolean>;
}
