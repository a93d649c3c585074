// The ignore rules a daemon asks about every path it sees: same answers as the `ignore` package, with
// memory that does not grow with the number of distinct paths (the package caches every answer).
import ignore from 'ignore';
import { describe, expect, it } from 'vitest';
import { BoundedIgnore, DEFAULT_IGNORES, IGNORE_CACHE_LIMIT } from '../daemon/capture/ignore.js';

const RULES = [...DEFAULT_IGNORES, 'build/', '*.log', '!keep.log', 'data/**/raw/'];

function pathAt(i: number): string {
  const names = ['a.m', 'run.log', 'keep.log', 'x.swp', 'model.py', '__pycache__/m.pyc', 'raw/s.bin'];
  return `p${i % 97}/d${i % 13}/${i % 5 === 0 ? 'build/' : i % 7 === 0 ? 'data/q/' : ''}${i}-${names[i % names.length]}`;
}

/** The size of the package's answer cache (its internals: if they change, this test says so). */
function cachedAnswers(matcher: BoundedIgnore): number {
  const current = (matcher as unknown as { current: { _ignoreCache?: object } }).current;
  if (current._ignoreCache === undefined) throw new Error('the ignore package no longer has _ignoreCache: revisit BoundedIgnore');
  return Object.keys(current._ignoreCache).length;
}

describe('BoundedIgnore', () => {
  it('answers like the ignore package, across its fresh starts', () => {
    const reference = ignore().add(RULES);
    const bounded = BoundedIgnore.of(RULES);
    let ignored = 0;
    for (let i = 0; i < IGNORE_CACHE_LIMIT * 3 + 17; i++) {
      const path = pathAt(i);
      const expected = reference.ignores(path);
      expect(bounded.ignores(path), path).toBe(expected);
      if (expected) ignored += 1;
    }
    // both kinds of answer were exercised
    expect(ignored).toBeGreaterThan(1000);
    expect(ignored).toBeLessThan(IGNORE_CACHE_LIMIT * 3);
  });

  it('keeps a bounded cache however many distinct paths it is asked about', () => {
    const bounded = BoundedIgnore.of(RULES);
    const unbounded = ignore().add(RULES);
    const paths = 60_000;
    for (let i = 0; i < paths; i++) {
      bounded.ignores(pathAt(i));
      unbounded.ignores(pathAt(i));
    }
    const grown = Object.keys((unbounded as unknown as { _ignoreCache: object })._ignoreCache).length;
    expect(grown).toBeGreaterThanOrEqual(paths);
    // each answer may also cache the answers for the path's parent directories (depth ≤ 4 here)
    expect(cachedAnswers(bounded)).toBeLessThanOrEqual(IGNORE_CACHE_LIMIT * 5);
    expect(cachedAnswers(bounded)).toBeLessThan(grown / 2);
  });
});
