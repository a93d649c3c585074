// The parts of the world the engine depends on, injected so tests can freeze time and ids.

export interface Clock {
  /** milliseconds since the epoch */
  now(): number;
}

export interface IdGenerator {
  /** a UUIDv7 (time-ordered) */
  uuid(): string;
  /** random bytes, hex-encoded (2 chars per byte) */
  randomHex(bytes: number): string;
}

export const systemClock: Clock = { now: () => Date.now() };

export function isoTimestamp(clock: Clock): string {
  return new Date(clock.now()).toISOString();
}
