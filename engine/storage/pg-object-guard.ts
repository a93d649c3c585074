import type { ObjectGuard } from '../ports/object-guard.js';
import type { ContentHash } from '../types.js';
import { type PgDatabase, prepared } from './pg-db.js';

// The shared bucket's guard (ports/object-guard.ts) on Postgres: object_touches holds when each hash
// was last written, on the database's clock — the one clock every replica shares, so a replica whose
// own clock is off cannot shorten another's grace period. A transaction-scoped advisory lock per hash
// (class 4) makes a touch and a collection of the same hash exclusive: a touch that comes while a
// collection runs waits for it to finish (and then finds the object gone, and stores it again).

/** Locks in hash order in one statement, so two transactions never deadlock and a batch costs one round trip. */
const LOCK_HASHES = 'SELECT pg_advisory_xact_lock(4, hashtext(h)) FROM (SELECT DISTINCT h FROM unnest($1::text[]) AS h ORDER BY h) AS sorted';

/**
 * A CTE (`locked`, one row) that takes the advisory lock of every hash in $1, in hash order, held until
 * the statement's transaction ends; a statement makes its writes wait for it with `locked.n >= 0`.
 */
export const LOCKED_HASHES_CTE = 'locked AS (SELECT count(pg_advisory_xact_lock(4, hashtext(h))) AS n FROM (SELECT DISTINCT h FROM unnest($1::text[]) AS h ORDER BY h) AS sorted)';

const TOUCH = prepared(`WITH ${LOCKED_HASHES_CTE}
   INSERT INTO object_touches (content_hash, touched_at)
   SELECT DISTINCT h, now() FROM unnest($1::text[]) AS h, locked WHERE locked.n >= 0
   ON CONFLICT (content_hash) DO UPDATE SET touched_at = excluded.touched_at
   RETURNING content_hash, (xmax = 0) AS inserted`);

export function createPgObjectGuard(db: PgDatabase): ObjectGuard {
  return {
    async touch(hashes) {
      if (hashes.length === 0) return new Set();
      // One statement, so one round trip (it runs once per content write): the CTE takes the locks,
      // in hash order, before the insert can produce a row; they are held until the statement's own
      // transaction commits. xmax = 0 marks a row this statement inserted (no record before).
      const rows = await db.query<{ content_hash: ContentHash; inserted: boolean }>(TOUCH, [hashes]);
      return new Set(rows.filter((row) => row.inserted).map((row) => row.content_hash));
    },

    collect(hash, graceMs, remove) {
      return db.tx(async (tx) => {
        await tx.query(LOCK_HASHES, [[hash]]);
        const recent = await tx.one('SELECT 1 FROM object_touches WHERE content_hash = $1 AND touched_at > now() - make_interval(secs => $2::double precision / 1000)', [hash, graceMs]);
        if (recent !== undefined) return false;
        // The same references as referencedHashes (versions, dataset shards of referenced manifests,
        // objects uploaded to a project), read under the lock: a record committed since the caller
        // last looked still saves the object.
        const referenced = await tx.one(
          `SELECT 1 WHERE EXISTS (SELECT 1 FROM versions WHERE content_hash = $1)
             OR EXISTS (SELECT 1 FROM dataset_shards ds WHERE ds.shard_hash = $1 AND EXISTS (SELECT 1 FROM versions v WHERE v.content_hash = ds.manifest_hash))
             OR EXISTS (SELECT 1 FROM project_objects WHERE content_hash = $1)`,
          [hash],
        );
        if (referenced !== undefined) return false;
        await remove();
        await tx.query('DELETE FROM object_touches WHERE content_hash = $1', [hash]);
        return true;
      });
    },
  };
}
