// Sync's change feed (issue 14): a workstation reads the project's versions in commit order after its
// cursor, a page at a time, and — with nothing new — waits on a long poll that answers as soon as
// the project changes, not when the wait runs out. Readers may follow; a bad cursor is a coded 400.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VersionRecord } from '../engine/types.js';
import { type Harness, openHarness } from './control-api-harness.js';

let h: Harness;
let project: string;

beforeAll(async () => {
  h = await openHarness();
  project = await h.createProject('thesis');
});

afterAll(async () => {
  await h.dispose();
});

interface Page {
  items: VersionRecord[];
  cursor: string;
  more: boolean;
}
const changes = (query: string, key?: string) => h.ok<Page>('GET', `/v1/projects/${project}/sync/changes?${query}`, key ? { key } : {});
const write = (path: string, body: string) => h.ok('PUT', `/v1/projects/${project}/fs/write?path=${encodeURIComponent(path)}`, { body, status: 201 });

describe('sync change feed', () => {
  it('pages through every version in commit order, then resumes from its cursor', async () => {
    for (let i = 0; i < 5; i++) await write(`f${i}.txt`, `v${i}\n`);
    await h.ok('POST', `/v1/projects/${project}/fs/delete`, { body: { path: 'f0.txt' } });
    const first = await changes('limit=4');
    expect(first.items.map((v) => v.path)).toEqual(['f0.txt', 'f1.txt', 'f2.txt', 'f3.txt']);
    expect(first.more).toBe(true);
    const second = await changes(`limit=4&cursor=${first.cursor}`);
    expect(second.items.map((v) => [v.path, v.kind])).toEqual([
      ['f4.txt', 'write'],
      ['f0.txt', 'delete'],
    ]);
    expect(second.more).toBe(false);
    // Nothing new: the same cursor comes back, and no items.
    expect(await changes(`cursor=${second.cursor}`)).toEqual({ items: [], cursor: second.cursor, more: false });
    await write('f5.txt', 'v5\n');
    expect((await changes(`cursor=${second.cursor}`)).items.map((v) => v.path)).toEqual(['f5.txt']);
  });

  it('a long poll answers when the project changes, well before its wait runs out', async () => {
    const now = await changes('limit=1000');
    const started = Date.now();
    const polling = changes(`cursor=${now.cursor}&waitMs=30000`);
    // Written while the poll waits (the poll reads first, then waits for the engine's announcement).
    await new Promise((resolve) => setTimeout(resolve, 200));
    await write('late.txt', 'arrives during the poll\n');
    const page = await polling;
    expect(page.items.map((v) => v.path)).toEqual(['late.txt']);
    expect(Date.now() - started).toBeLessThan(15_000);
    // With nothing happening, it answers empty once the wait is over.
    const idle = await changes(`cursor=${page.cursor}&waitMs=300`);
    expect(idle.items).toEqual([]);
  });

  it('readers may follow; a malformed cursor is INVALID_CURSOR', async () => {
    const viewer = await h.createKey({ purpose: 'viewer feed', role: 'viewer' });
    expect((await changes('limit=2', viewer.apiKey)).items).toHaveLength(2);
    const bad = await h.request('GET', `/v1/projects/${project}/sync/changes?cursor=abc`);
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ error: { code: 'INVALID_CURSOR' } });
  });
});
