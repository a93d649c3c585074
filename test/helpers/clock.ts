import type { Clock } from '../../engine/ports/world.js';

export interface FrozenClock extends Clock {
  advance(ms: number): void;
  set(ms: number): void;
}

/** Time stands still unless the test moves it. */
export function frozenClock(start = Date.UTC(2026, 10, 22, 9, 0, 0)): FrozenClock {
  let now = start;
  return {
    now: () => now,
    advance(ms) {
      now += ms;
    },
    set(ms) {
      now = ms;
    },
  };
}

