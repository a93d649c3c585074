// Watch mode's engine feed (daemon/watch/engine-feed.ts) reads what was committed after the last
// record it brought to disk, whatever retention and the pull did to that record since. The sync
// model's seed 43001: B's feed had brought its own `a/a/a` to disk; the pull then recorded the
// server's deletions and its file `a`, retention (1 version a path) pruned B's `a/a/a`, and the pull
// adopted that same version id again as the server's conflict copy of it — at the top of the
// history. The feed, whose cursor was that id, found it first and stopped: nothing in between
// reached the disk, the cursor equalled the newest record, and sync said in sync.
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PulledVersion } from '../engine/commands/sync-adopt.js';
import type { VersionRecord } from '../engine/types.js';
import type { HostContext } from '../daemon/host.js';
import { EngineFeed } from '../daemon/watch/engine-feed.js';
import { alice, openTestEngine, type TestEngine } from './helpers/world.js';

describe('watch mode: the engine feed', () => {
  let t: TestEngine;
  beforeEach(async () => {
    t = await openTestEngine();
  });
  afterEach(async () => {
    await t.dispose();
  });

  /** The parts of a watch host the feed uses: the engine, the state DB's flags, the capture's own versions (none). */
  function feedOf(): EngineFeed {
    const flags = new Map<string, unknown>();
    const host = {
      engine: t.engine,
      projectId: t.projectId,
      state: { flags: { get: (projectId: string, key: string) => flags.get(`${projectId}/${key}`), set: (projectId: string, key: string, value: unknown) => flags.set(`${projectId}/${key}`, value) } },
      capture: { takeOwnVersion: () => false },
    };
    return new EngineFeed(host as unknown as HostContext);
  }

  const pulled = (path: string, contentHash: string | null, size = 0): PulledVersion => {
    const record: VersionRecord = {
      versionId: randomUUID(),
      projectId: t.projectId,
      path,
      contentHash: contentHash as VersionRecord['contentHash'],
      size,
      actor: { id: 'u-bob', kind: 'user', name: 'bob' },
      timestamp: '2026-11-29T12:20:40.000Z',
      kind: contentHash === null ? 'delete' : 'write',
      restoredFrom: null,
      executable: false,
      symlink: false,
      dataset: false,
    };
    return { record, current: true };
  };

  it('sees what was committed after its last record though that record was pruned and its id committed again', async () => {
    const feed = feedOf();
    const mine = (await t.engine.writeFile({ projectId: t.projectId, path: 'a/a/a', actor: alice, content: Buffer.from('v67\n+92\n') })).version;
    // Brought to disk: the feed's cursor is this record.
    const first = await feed.read();
    feed.save(first.newest);
    expect(await feed.read()).toMatchObject({ kind: 'paths', paths: [] });

    // Pushed (the hold moves past it); the pull brings the server's deletion of `a/a/a` and its file `b`.
    const pushedSeq = (await t.engine.syncOutbox({ projectId: t.projectId, afterSeq: 0, limit: 10 })).lastSeq!;
    t.engine.holdRetention(t.projectId, pushedSeq);
    await t.engine.setRetention({ projectId: t.projectId, maxVersions: 1, actor: alice });
    const file = await t.store.putBuffer(Buffer.from('v5'));
    const page1 = [pulled('a/a/a', null), pulled('b', file.hash, file.size)];
    expect((await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq, versions: page1 })).map((o) => o.result)).toEqual(['adopted', 'adopted']);
    // Retention prunes this workstation's `a/a/a` (its deletion is the one version kept)…
    await t.engine.settle();
    expect(await t.engine.syncKnownVersions({ projectId: t.projectId, versionIds: [mine.versionId] })).toEqual(new Set());
    // …and the server's conflict copy of it comes down under its id (its bytes fetched again).
    await t.store.putBuffer(Buffer.from('v67\n+92\n'));
    const copy: PulledVersion = { record: { ...mine, path: 'a (conflict wsB 2026-11-29 1220)/a/a' }, current: true };
    expect((await t.engine.adoptSyncedVersions({ projectId: t.projectId, pushedSeq, versions: [copy] })).map((o) => o.result)).toEqual(['adopted']);

    const read = await feed.read();
    expect(read.kind).toBe('paths');
    expect(read.kind === 'paths' ? [...read.paths].sort() : null).toEqual(['a (conflict wsB 2026-11-29 1220)/a/a', 'a/a/a', 'b']);
    feed.save(read.newest);
    expect(await feed.read()).toMatchObject({ kind: 'paths', paths: [] });
  });
});
