// `strata sync wait` on a terminal draws the initial upload as a bar: what was pushed since the wait
// began against what is left, with the bytes still to go (issue 14).
import { describe, expect, it } from 'vitest';
import { progressLine } from '../cli/commands/sync.js';

describe('sync wait progress', () => {
  it('draws the share pushed since the wait began', () => {
    expect(progressLine(8_000, 12_000, 12_000_000, 35)).toBe('[########------------]  40% 8,000/20,000 versions pushed (11 MiB to go), 35 pulled');
    expect(progressLine(0, 0, 0, 0)).toMatch(/^\[#{20}\] 100% 0\/0 versions pushed/);
    expect(progressLine(0, 500, 1024, 0)).toMatch(/^\[-{20}\] {3}0% 0\/500/);
  });
});
