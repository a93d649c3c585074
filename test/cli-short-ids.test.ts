// Short ids end to end (issue 18): the compiled CLI against `strata serve` on SQLite and on Postgres.
// Versions and snapshots are named by a unique prefix or ending of their id, a snapshot also by its
// number; an ambiguous abbreviation is AMBIGUOUS_ID (exit 6) naming candidates and changes nothing.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from './cli-harness.js';
import { type Backend, type ServedBackend, cliIn, servedBackend } from './helpers/served-backend.js';

interface Version {
  versionId: string;
  path: string;
  restoredFrom: string | null;
}
interface Snapshot {
  snapshotId: string;
  seq: number;
}

const hex = (id: string) => id.replace(/-/g, '');
const commonPrefix = (a: string, b: string) => {
  let n = 0;
  while (n < a.length && a[n] === b[n]) n += 1;
  return a.slice(0, n);
};

describe.each<Backend>(['sqlite', 'postgres'])('short ids on %s', (backend) => {
  let served: ServedBackend;
  let env: NodeJS.ProcessEnv;
  const { cli, ok } = cliIn(() => env);
  const history = async () => (await ok<{ items: Version[] }>(['history', '--all'])).items;

  beforeAll(async () => {
    served = await servedBackend(backend, `strata-short-${backend}-`);
    env = await served.project('short');
    for (const content of ['one\n', 'two\n', 'three\n']) await ok(['put', '-', 'a.txt'], content);
    await ok(['snapshot', 'create', '-m', 'first']);
    await ok(['put', '-', 'b.txt'], 'bee\n');
    await ok(['snapshot', 'create', '-m', 'second']);
  }, 120_000);

  afterAll(async () => {
    await served?.dispose();
  }, 60_000);

  it('shows the last 10 digits in tables and takes them, or a unique prefix, where a version id goes', async () => {
    const versions = await history();
    const oldest = versions.find((v) => v.path === 'a.txt' && versions.filter((w) => w.path === 'a.txt').at(-1) === v)!;
    const table = await cli(['history', 'a.txt']);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain(hex(oldest.versionId).slice(-10));
    expect(table.stdout).not.toContain(oldest.versionId);

    const cat = await cli(['cat', 'a.txt', '--version', hex(oldest.versionId).slice(-10)]);
    expect([cat.code, cat.stdout]).toStrictEqual([0, 'one\n']);
    // a prefix, dashes left out, upper case: as git takes abbreviated hashes
    const byPrefix = await cli(['cat', 'a.txt', '--version', hex(oldest.versionId).slice(0, 28).toUpperCase()]);
    expect([byPrefix.code, byPrefix.stdout]).toStrictEqual([0, 'one\n']);

    const restored = await ok<{ version: Version }>(['restore', hex(oldest.versionId).slice(-6)]);
    expect(restored.version.restoredFrom).toBe(oldest.versionId);
    const after = await cli(['cat', 'a.txt']);
    expect(after.stdout).toBe('one\n');
  });

  it('says AMBIGUOUS_ID (exit 6) with candidates for an abbreviation of several versions, and changes nothing', async () => {
    const versions = await history();
    // the two ids sharing the longest prefix: at least 6 digits (their timestamps are seconds apart)
    let best = { prefix: '', ids: [] as string[] };
    for (const a of versions) {
      for (const b of versions) {
        const prefix = commonPrefix(hex(a.versionId), hex(b.versionId));
        if (a !== b && prefix.length > best.prefix.length) best = { prefix, ids: [a.versionId, b.versionId] };
      }
    }
    expect(best.prefix.length).toBeGreaterThanOrEqual(6);
    const result = await cli(['restore', best.prefix, '--json']);
    expect(result.code).toBe(6);
    const error = parseJson<{ error: { code: string; message: string; details: { candidates: string[] } } }>(result).error;
    expect(error.code).toBe('AMBIGUOUS_ID');
    expect(error.details.candidates).toEqual(expect.arrayContaining(best.ids));
    expect(error.message).toContain('matches more than one version');
    expect(error.message).toContain(hex(best.ids[0]!).slice(-10));
    expect(await history()).toHaveLength(versions.length);
    const human = await cli(['restore', best.prefix]);
    expect(human.code).toBe(6);
    expect(human.stderr).toContain('give more digits');
  });

  it('reports no match with the not-found codes, and too few digits as no match', async () => {
    const versions = await history();
    const missing = await cli(['restore', 'fffffffff0', '--json']);
    expect(missing.code).toBe(3);
    expect(parseJson<{ error: { code: string } }>(missing).error.code).toBe('VERSION_NOT_FOUND');
    const short = await cli(['restore', hex(versions[0]!.versionId).slice(-5), '--json']);
    expect(parseJson<{ error: { code: string } }>(short).error.code).toBe('VERSION_NOT_FOUND');
    const noSnapshot = await cli(['snapshot', 'show', '99', '--json']);
    expect(noSnapshot.code).toBe(3);
    expect(parseJson<{ error: { code: string } }>(noSnapshot).error.code).toBe('SNAPSHOT_NOT_FOUND');
    expect(await history()).toHaveLength(versions.length);
  });

  it('names a snapshot by its number, its short id or a tag (a tag wins over a number)', async () => {
    const snapshots = (await ok<{ items: Snapshot[] }>(['snapshot', 'list'])).items;
    const first = snapshots.find((s) => s.seq === 1)!;
    const second = snapshots.find((s) => s.seq === 2)!;
    const list = await cli(['snapshot', 'list']);
    expect(list.stdout).toContain(hex(second.snapshotId).slice(-10));
    expect(list.stdout).not.toContain(second.snapshotId);

    expect((await ok<{ snapshot: Snapshot }>(['snapshot', 'show', '1'])).snapshot.snapshotId).toBe(first.snapshotId);
    expect((await ok<{ snapshot: Snapshot }>(['snapshot', 'show', hex(second.snapshotId).slice(-8)])).snapshot.snapshotId).toBe(second.snapshotId);
    const diff = await ok<{ from: string; to: string }>(['snapshot', 'diff', '1', '2']);
    expect([diff.from, diff.to]).toStrictEqual([first.snapshotId, second.snapshotId]);

    const restored = await ok<{ snapshot: Snapshot; changed: number }>(['snapshot', 'restore', '1']);
    expect(restored.snapshot.snapshotId).toBe(first.snapshotId);
    expect(restored.changed).toBe(2); // a.txt back to "three", b.txt gone
    expect((await cli(['cat', 'a.txt'])).stdout).toBe('three\n');
    expect((await cli(['cat', 'b.txt'])).code).toBe(3);

    await ok(['tag', 'add', '2', '1']);
    expect((await ok<{ snapshot: Snapshot }>(['snapshot', 'show', '1'])).snapshot.snapshotId).toBe(second.snapshotId);
  });

  it('takes a short id as --base-version: the current one writes, another is STALE_BASE_VERSION', async () => {
    const versions = (await ok<{ items: Version[] }>(['history', 'a.txt'])).items;
    const [current, older] = [versions[0]!, versions[1]!];
    const stale = await cli(['put', '-', 'a.txt', '--base-version', hex(older.versionId).slice(-10), '--json'], 'lost\n');
    expect(stale.code).toBe(4);
    expect(parseJson<{ error: { code: string } }>(stale).error.code).toBe('STALE_BASE_VERSION');
    const written = await ok<{ version: Version }>(['put', '-', 'a.txt', '--base-version', hex(current.versionId).slice(-10)], 'five\n');
    expect((await cli(['cat', 'a.txt'])).stdout).toBe('five\n');
    const removed = await ok<{ version: Version }>(['rm', 'a.txt', '--base-version', hex(written.version.versionId).slice(-8)]);
    expect(removed.version.path).toBe('a.txt');
  });
});
