// The delta finder (daemon/sync/delta.ts): whatever the edit, the parts rebuild the new bytes exactly,
// and what was kept from the old bytes is copied, not sent: an overwrite, an insertion and a deletion
// each cost about the bytes they changed.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type DeltaPart, deltaParts, literalBytes } from '../daemon/sync/delta.js';

function rebuild(parts: DeltaPart[], target: Buffer, source: Buffer): Buffer {
  return Buffer.concat(
    parts.map((part) => ('copy' in part ? source.subarray(part.copy.offset, part.copy.offset + part.copy.length) : target.subarray(part.literal.offset, part.literal.offset + part.literal.length))),
  );
}

describe('delta parts', () => {
  const old = randomBytes(2 * 1024 * 1024);

  it('an overwrite in the middle: the rest is copied, the overwritten bytes sent', () => {
    const edited = Buffer.from(old);
    randomBytes(100_000).copy(edited, 700_001);
    const parts = deltaParts(edited, old, 4096);
    expect(rebuild(parts, edited, old).equals(edited)).toBe(true);
    expect(literalBytes(parts)).toBeGreaterThanOrEqual(100_000 - 2);
    expect(literalBytes(parts)).toBeLessThan(100_010);
  });

  it('an insertion and a deletion shift the rest: still copied', () => {
    const edited = Buffer.concat([old.subarray(0, 12_345), Buffer.from('inserted text'), old.subarray(12_345, 1_500_000), old.subarray(1_600_000)]);
    const parts = deltaParts(edited, old, 4096);
    expect(rebuild(parts, edited, old).equals(edited)).toBe(true);
    expect(literalBytes(parts)).toBeLessThan(64);
  });

  it('nothing in common, tiny inputs, empty inputs', () => {
    const other = randomBytes(50_000);
    expect(deltaParts(other, old, 4096)).toEqual([{ literal: { offset: 0, length: other.length } }]);
    expect(rebuild(deltaParts(Buffer.from('ab'), old, 4096), Buffer.from('ab'), old).toString()).toBe('ab');
    expect(deltaParts(Buffer.alloc(0), old, 4096)).toEqual([]);
    const same = deltaParts(old, old, 4096);
    expect(same).toEqual([{ copy: { offset: 0, length: old.length } }]);
  });

  it('a manifest with one shard entry changed: copied around it at a small block size', () => {
    const entry = (i: number) => `{"hash":"blake3:${i.toString(16).padStart(64, '0')}","size":${1_000_000 + i}}`;
    const manifest = (changed: number) =>
      Buffer.from(`{"format":"strata.dataset/1","size":1,"hash":"blake3:${String(changed).padStart(64, '0')}","shards":[${Array.from({ length: 2000 }, (_, i) => (i === changed ? entry(99_999) : entry(i))).join(',')}]}\n`);
    const before = manifest(-1);
    const after = manifest(1000);
    const parts = deltaParts(after, before, 64);
    expect(rebuild(parts, after, before).equals(after)).toBe(true);
    expect(literalBytes(parts)).toBeLessThan(300);
  });
});
