// splitShards: a pulled dataset comes down in byte ranges at once, each a run of whole shards.
import { describe, expect, it } from 'vitest';
import { splitShards } from '../daemon/sync/transfer.js';
import type { ContentHash } from '../engine/types.js';

const shard = (i: number, size: number) => ({ hash: `blake3:${String(i).padStart(64, '0')}` as ContentHash, size });

describe('splitShards', () => {
  it('cuts at shard edges into runs of about equal bytes that cover the dataset in order', () => {
    const shards = [300, 900, 400, 1200, 700, 500, 1000, 800].map((size, i) => shard(i, size));
    const parts = splitShards(shards, 2);
    expect(parts).toHaveLength(2);
    expect(parts.flatMap((p) => p.shards)).toEqual(shards);
    expect(parts[0]!.start).toBe(0);
    expect(parts[1]!.start).toBe(parts[0]!.size);
    expect(parts[0]!.size + parts[1]!.size).toBe(5800);
    expect(Math.abs(parts[0]!.size - parts[1]!.size)).toBeLessThanOrEqual(1200);
  });

  it('one part when asked for one, or when there is a single shard; never an empty part', () => {
    const shards = [shard(0, 10), shard(1, 20)];
    expect(splitShards(shards, 1)).toEqual([{ start: 0, size: 30, shards }]);
    expect(splitShards([shard(0, 10)], 2)).toEqual([{ start: 0, size: 10, shards: [shard(0, 10)] }]);
    for (const part of splitShards([shard(0, 1000), shard(1, 1)], 2)) expect(part.shards.length).toBeGreaterThan(0);
  });
});
