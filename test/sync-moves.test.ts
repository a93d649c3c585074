// What the incoming delete guard counts (daemon/sync/moves.ts): deletions of files here, leaving out
// content that the same change set writes at another path — a rename, whatever the order of its two
// halves, across the page and what was read ahead.
import { describe, expect, it } from 'vitest';
import type { SyncChange } from '../engine/ports/metadata-repository.js';
import type { ContentHash } from '../engine/types.js';
import { ChangeSetDeletions } from '../daemon/sync/moves.js';

const hash = (n: number) => `blake3:${String(n).padStart(64, '0')}` as ContentHash;
const write = (path: string, content: number, current = true) => ({ path, contentHash: hash(content), current }) as SyncChange;
const remove = (path: string, current = true) => ({ path, contentHash: null, current }) as SyncChange;

describe('change set deletions', () => {
  // Here: a/1 … a/4 with contents 1 … 4, and b with content 1 too (a copy).
  const here = new Map<string, ContentHash>([...[1, 2, 3, 4].map((n) => [`a/${n}`, hash(n)] as const), ['b', hash(1)]]);
  const hashHere = async (path: string) => here.get(path) ?? null;

  it('a rename pair is a move, whichever half comes first; a plain deletion counts', async () => {
    const set = new ChangeSetDeletions();
    await set.add([remove('a/1'), write('m/1', 1), write('m/2', 2), remove('a/2'), remove('a/3')], hashHere, true);
    expect(set.count()).toEqual({ page: 1, ahead: 0, moves: 2 });
  });

  it('the other half read ahead pairs with the page; deletions ahead count as ahead', async () => {
    const set = new ChangeSetDeletions();
    await set.add([write('m/0', 9), remove('a/1'), remove('a/2')], hashHere, true);
    expect(set.count()).toEqual({ page: 2, ahead: 0, moves: 0 });
    await set.add([write('m/1', 1), remove('a/3'), remove('a/4'), write('m/4', 4)], hashHere, false);
    expect(set.count()).toEqual({ page: 1, ahead: 1, moves: 2 });
  });

  it('one write pairs with one deletion; a path not here or no longer current counts for nothing', async () => {
    const set = new ChangeSetDeletions();
    // content 1 is at a/1 and b; one write of it moves one of them, the other is deleted.
    await set.add([remove('a/1'), remove('b'), write('c', 1), remove('gone'), remove('a/2', false), write('d', 3, false), remove('a/3')], hashHere, true);
    expect(set.count()).toEqual({ page: 2, ahead: 0, moves: 1 });
  });
});
