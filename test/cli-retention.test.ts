// `strata retention set N [--dry-run]` end to end, on SQLite and on Postgres (issue 18): the dry run
// says what N would prune (versions, bytes, the paths with most) and changes nothing; the real run
// says what it pruned, and it is what the dry run said.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Backend, type ServedBackend, cliIn, servedBackend } from './helpers/served-backend.js';

interface Preview {
  projectId: string;
  maxVersions: number;
  dryRun: true;
  currentMaxVersions: number;
  pruned: { versions: number; bytes: number; pathCount: number; paths: Array<{ path: string; versions: number; bytes: number }> };
}

describe.each<Backend>(['sqlite', 'postgres'])('retention dry run on %s', (backend) => {
  let served: ServedBackend;
  let env: NodeJS.ProcessEnv;
  const { cli, ok } = cliIn(() => env);
  const versionCount = async () => (await ok<{ items: unknown[] }>(['history', '--all'])).items.length;

  beforeAll(async () => {
    served = await servedBackend(backend, `strata-retention-${backend}-`);
    env = await served.project('retention');
    // a.txt: 5 versions of 100 bytes, the 2nd pinned by a snapshot; b.txt: 3 of 10 bytes; c.txt: 1
    for (let n = 1; n <= 5; n += 1) {
      await ok(['put', '-', 'a.txt'], String(n).repeat(100));
      if (n === 2) await ok(['snapshot', 'create']);
    }
    for (let n = 1; n <= 3; n += 1) await ok(['put', '-', 'b.txt'], String(n).repeat(10));
    await ok(['put', '-', 'c.txt'], 'c');
  }, 120_000);

  afterAll(async () => {
    await served?.dispose();
  }, 60_000);

  it('says what a setting would prune, per path, and changes nothing', async () => {
    const before = await versionCount();
    const preview = await ok<Preview>(['retention', 'set', '1', '--dry-run']);
    // a.txt loses 1, 3, 4 (2 is pinned, 5 current); b.txt loses 1, 2
    expect(preview).toStrictEqual({
      projectId: env['STRATA_PROJECT_ID'],
      maxVersions: 1,
      dryRun: true,
      currentMaxVersions: 0,
      pruned: {
        versions: 5,
        bytes: 320,
        pathCount: 2,
        paths: [
          { path: 'a.txt', versions: 3, bytes: 300 },
          { path: 'b.txt', versions: 2, bytes: 20 },
        ],
      },
    });
    const human = await cli(['retention', 'set', '1', '--dry-run']);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('retention 1 versions/path (now: unlimited) would prune 5 versions (320 B) of 2 paths; nothing was changed');
    expect(human.stdout).toMatch(/^\s*3\s+300 B\s+a\.txt$/m);
    expect((await ok(['retention', 'set', '3', '--dry-run']))).toMatchObject({ pruned: { versions: 1, bytes: 100, pathCount: 1 } });
    expect(await versionCount()).toBe(before);
    expect(await ok(['retention', 'get'])).toStrictEqual({ projectId: env['STRATA_PROJECT_ID'], maxVersions: 0 });
    const bad = await cli(['retention', 'set', '-1', '--dry-run']);
    expect(bad.code).toBe(2);
    expect(await versionCount()).toBe(before);
  });

  it('prunes what the dry run said, and says so', async () => {
    const before = await versionCount();
    const preview = await ok<Preview>(['retention', 'set', '1', '--dry-run']);
    const set = await ok<{ maxVersions: number; pruned: { versions: number; bytes: number } }>(['retention', 'set', '1']);
    expect(set.pruned).toStrictEqual({ versions: preview.pruned.versions, bytes: preview.pruned.bytes });
    expect(await versionCount()).toBe(before - preview.pruned.versions);
    const again = await cli(['retention', 'set', '1']);
    expect(again.stdout.trim()).toBe('retention: 1 versions/path; nothing pruned');
    expect(await ok(['retention', 'set', '1', '--dry-run'])).toMatchObject({ currentMaxVersions: 1, pruned: { versions: 0, bytes: 0, paths: [] } });
    const human = await cli(['retention', 'set', '1', '--dry-run']);
    expect(human.stdout.trim()).toBe('retention 1 versions/path (now: 1 versions/path) would prune nothing');
  });
});
