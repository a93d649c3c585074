// A file time exact to the nanosecond (issue 39 item 3): whole milliseconds since the epoch and the
// nanoseconds past them (0..999,999). One double cannot hold it: a time of today is ~1.7e18 ns, past
// the 2^53 (~9.0e15) integers a double holds exactly, and kept as fractional milliseconds,
// `touch -d '… .123456789'` read back `.123456787`. Both parts are exact integers in a double: they
// cross to native/fuse in two scratch slots each (fuse-lowlevel.ts) and are two columns of mount_times.
// Milliseconds stay the unit the mount compares and computes with (Date.now(), a version's timestamp).

export interface FileTime {
  /** whole milliseconds since the epoch (rounded down: a time before 1970 has a positive `ns` too) */
  readonly ms: number;
  /** nanoseconds past `ms`: 0..999,999 */
  readonly ns: number;
}

const NS_PER_MS = 1_000_000;

/** A time in milliseconds (Date.now(), a version's timestamp: whole); a fraction is rounded to the nanosecond. */
export function msTime(ms: number): FileTime {
  const whole = Math.floor(ms);
  const ns = Math.round((ms - whole) * NS_PER_MS);
  return ns === NS_PER_MS ? { ms: whole + 1, ns: 0 } : { ms: whole, ns };
}

/** A time in nanoseconds since the epoch (a bigint stat's atimeNs, the index's mtimeNs). */
export function nsTime(ns: bigint): FileTime {
  let ms = ns / 1_000_000n;
  let rest = ns % 1_000_000n;
  if (rest < 0n) {
    rest += 1_000_000n;
    ms -= 1n;
  }
  return { ms: Number(ms), ns: Number(rest) };
}

export function timeNs(time: FileTime): bigint {
  return BigInt(time.ms) * 1_000_000n + BigInt(time.ns);
}

export function sameTime(a: FileTime, b: FileTime): boolean {
  return a.ms === b.ms && a.ns === b.ns;
}
