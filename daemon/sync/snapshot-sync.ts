// Snapshots both ways (issue 14). Up: each snapshot of this workstation's chain the server does not
// have is sent with its pins (local version ids mapped to the server's), once the versions it pins
// have gone up — before that the server answers SNAPSHOT_PINS_MISSING and the snapshot waits for the
// next round. It lands as the next of the server's chain, however long it waited offline. Down: each
// snapshot of the server's chain this workstation does not have is added to its own chain with the
// same id, time, author and pins. Positions are kept in the daemon's state; a repeat costs a lookup.
import type { Logger } from 'pino';
import type { Engine } from '../../engine/engine-api.js';
import { isStrataError } from '../../engine/errors.js';
import type { DaemonState } from '../state.js';
import type { AliasTable } from './aliases.js';
import { type Remote, RemoteError } from './remote.js';

const PAGE = 50;

export interface SnapshotSyncDeps {
  engine: Engine;
  state: DaemonState;
  projectId: string;
  aliases: AliasTable;
  log: Logger;
}

/**
 * Sends this workstation's snapshots the server lacks, in chain order, up to the first taken after
 * `pendingSince` (the time of the oldest version not yet pushed: that snapshot may pin it). With
 * nothing pending (null) the outbox is empty, so a pin the server still lacks will never come (a
 * version it refused): the snapshot is sent without it, and the log says so. Returns how many were sent.
 */
export async function pushSnapshots(deps: SnapshotSyncDeps, remote: Remote, options: { pendingSince: string | null; signal: AbortSignal }): Promise<number> {
  const final = options.pendingSince === null;
  const { engine, state, projectId, aliases, log } = deps;
  let after = state.flags.get<number>(projectId, 'sync.snapshotsPushedSeq') ?? 0;
  let sent = 0;
  for (;;) {
    const page = await engine.snapshotFeed({ projectId, afterSeq: after, limit: PAGE });
    for (const snapshot of page.items) {
      if (options.pendingSince !== null && snapshot.timestamp >= options.pendingSince) return sent;
      if (!(await remote.hasSnapshot(snapshot.snapshotId, options.signal))) {
        const entries: Array<{ path: string; versionId: string }> = [];
        let cursor: string | undefined;
        do {
          const part = await engine.snapshotEntries({ projectId, snapshotId: snapshot.snapshotId, limit: 1000, ...(cursor === undefined ? {} : { cursor }) });
          for (const entry of part.items) entries.push({ path: entry.path, versionId: aliases.remoteOf(entry.versionId) });
          cursor = part.nextCursor;
        } while (cursor !== undefined);
        const body = { snapshotId: snapshot.snapshotId, message: snapshot.message, timestamp: snapshot.timestamp, entries, ...(final ? { partial: true } : {}) };
        try {
          const outcome = await remote.pushSnapshot(body, options.signal);
          if (outcome.result === 'applied' && outcome.missing.length > 0) {
            log.warn({ snapshotId: snapshot.snapshotId, missing: outcome.missing.slice(0, 10), count: outcome.missing.length }, 'snapshot sent without files the server never accepted');
          }
        } catch (error) {
          // Its versions are still on their way up: the next round sends it.
          if (error instanceof RemoteError && error.code === 'SNAPSHOT_PINS_MISSING') return sent;
          throw error;
        }
        sent++;
      }
      after = snapshot.seq;
      state.flags.set(projectId, 'sync.snapshotsPushedSeq', after);
    }
    if (!page.more) return sent;
  }
}

/** Adds the server's snapshots this workstation lacks to its chain (call once the version feed is read to its end). */
export async function pullSnapshots(deps: SnapshotSyncDeps, remote: Remote, signal: AbortSignal): Promise<number> {
  const { engine, state, projectId, log } = deps;
  let after = state.flags.get<number>(projectId, 'sync.snapshotsPulledSeq') ?? 0;
  let adopted = 0;
  for (;;) {
    const page = await remote.snapshotsAfter(after, PAGE, signal);
    for (const snapshot of page.items) {
      if (!(await known(engine, projectId, snapshot.snapshotId))) {
        const entries: Array<{ path: string; versionId: string }> = [];
        let cursor: string | null = null;
        do {
          const part = await remote.snapshotEntries(snapshot.snapshotId, cursor, signal);
          for (const entry of part.items) entries.push({ path: entry.path, versionId: entry.versionId });
          cursor = part.nextCursor ?? null;
        } while (cursor !== null);
        // partial: a version the server pruned before this workstation read it cannot be pinned here.
        const outcome = await engine.recordSyncedSnapshot({
          projectId,
          actor: snapshot.actor,
          snapshot: { snapshotId: snapshot.snapshotId, message: snapshot.message, timestamp: snapshot.timestamp, entries, partial: true },
        });
        if (outcome.result === 'applied' && outcome.missing.length > 0) {
          log.warn({ snapshotId: snapshot.snapshotId, count: outcome.missing.length }, 'snapshot adopted without versions this workstation never received');
        }
        adopted++;
      }
      after = snapshot.seq;
      state.flags.set(projectId, 'sync.snapshotsPulledSeq', after);
    }
    if (!page.more) return adopted;
  }
}

async function known(engine: Engine, projectId: string, snapshotId: string): Promise<boolean> {
  try {
    await engine.getSnapshot(projectId, snapshotId);
    return true;
  } catch (error) {
    if (isStrataError(error, 'SNAPSHOT_NOT_FOUND')) return false;
    throw error;
  }
}
