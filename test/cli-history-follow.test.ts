// `strata history PATH --follow` across renames (issue 18), the compiled CLI against `strata serve`
// on SQLite and on Postgres: the file's versions under each of its names, newest first, and nothing
// of a later, unrelated file at an old name.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Backend, type ServedBackend, cliIn, servedBackend } from './helpers/served-backend.js';

interface Followed {
  items: Array<{ path: string; kind: string; size: number; contentHash: string | null; renamedFrom?: string }>;
  more: boolean;
}

describe.each<Backend>(['sqlite', 'postgres'])('history --follow on %s', (backend) => {
  let served: ServedBackend;
  let env: NodeJS.ProcessEnv;
  const { cli, ok } = cliIn(() => env);

  beforeAll(async () => {
    served = await servedBackend(backend, `strata-follow-${backend}-`);
    env = await served.project('follow');
    await ok(['put', '-', 'draft.md'], 'one\n');
    await ok(['put', '-', 'draft.md'], 'two\n');
    await ok(['mv', 'draft.md', 'paper/final.md']);
    await ok(['put', '-', 'paper/final.md'], 'three\n');
    await ok(['mv', 'paper/final.md', 'thesis.md']);
    await ok(['put', '-', 'thesis.md'], 'four!\n');
    // a new file under an old name: not the thesis's history
    await ok(['put', '-', 'draft.md'], 'unrelated\n');
  }, 120_000);

  afterAll(async () => {
    await served?.dispose();
  }, 60_000);

  it('lists the versions under every earlier name, newest first, marking where each rename was', async () => {
    const plain = await ok<{ items: unknown[] }>(['history', 'thesis.md']);
    expect(plain.items).toHaveLength(2);
    const followed = await ok<Followed>(['history', 'thesis.md', '--follow']);
    expect(followed.more).toBe(false);
    expect(followed.items.map((v) => [v.path, v.size, v.renamedFrom ?? null])).toStrictEqual([
      ['thesis.md', 6, null],
      ['thesis.md', 6, 'paper/final.md'],
      ['paper/final.md', 6, null],
      ['paper/final.md', 4, 'draft.md'],
      ['draft.md', 4, null],
      ['draft.md', 4, null],
    ]);
    // the tombstones the renames left, and the unrelated later draft.md, are not this file's
    expect(followed.items.every((v) => v.contentHash !== null && v.size !== 10)).toBe(true);
    const human = await cli(['history', 'thesis.md', '--follow']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/\brename\s+file\s+6 B\s+.*thesis\.md \(from paper\/final\.md\)$/m);
    expect(human.stdout).toMatch(/\brename\s+file\s+4 B\s+.*paper\/final\.md \(from draft\.md\)$/m);
  });

  it('stops at --limit and says there is more; needs a PATH', async () => {
    const limited = await ok<Followed>(['history', 'thesis.md', '--follow', '--limit', '3']);
    expect(limited.items.map((v) => v.path)).toStrictEqual(['thesis.md', 'thesis.md', 'paper/final.md']);
    expect(limited.more).toBe(true);
    const noPath = await cli(['history', '--follow']);
    expect(noPath.code).toBe(2);
    expect(noPath.stderr).toContain('--follow needs a PATH');
    // a file never renamed: its own history, nothing more
    const draft = await ok<Followed>(['history', 'draft.md', '--follow']);
    expect(draft.items.map((v) => v.kind)).toStrictEqual(['write', 'delete', 'write', 'write']);
  });
});
