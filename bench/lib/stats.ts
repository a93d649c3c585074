// Small statistics: this machine is noisy (2 cores), so every figure is a median with its min and max.

export interface Summary {
  median: number;
  min: number;
  max: number;
  n: number;
  samples: number[];
}

export function summarize(samples: number[]): Summary {
  if (samples.length === 0) throw new TypeError('summarize needs at least one sample');
  const sorted = [...samples].sort((a, b) => a - b);
  return { median: percentile(sorted, 50), min: sorted[0]!, max: sorted.at(-1)!, n: samples.length, samples: samples.map(round3) };
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) throw new TypeError('percentile of nothing');
  if (p === 50 && sorted.length % 2 === 0) {
    const mid = sorted.length / 2;
    return (sorted[mid - 1]! + sorted[mid]!) / 2;
  }
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** Summary of a derived quantity (e.g. MB/s from seconds): the median of the transformed samples. */
export function mapSummary(summary: Summary, f: (value: number) => number): Summary {
  return summarize(summary.samples.map(f));
}

export function seconds(startNs: bigint): number {
  return Number(process.hrtime.bigint() - startNs) / 1e9;
}

export function now(): bigint {
  return process.hrtime.bigint();
}

export interface TargetCheck {
  name: string;
  target: string;
  value: number;
  met: boolean;
}

export function target(name: string, value: number, op: '>=' | '<=', bound: number, unit = ''): TargetCheck {
  return { name, target: `${op} ${bound}${unit}`, value: round3(value), met: op === '>=' ? value >= bound : value <= bound };
}

/**
 * Speed of A relative to B round by round (B's seconds ÷ A's seconds in the same round), summarised.
 * Rounds run a few seconds apart, so on a machine whose background load drifts this is steadier than
 * the ratio of the two medians. Null when the rounds do not pair up (a variant was skipped).
 */
export function pairedSpeedup(aSeconds: number[], bSeconds: number[]): Summary | null {
  if (aSeconds.length === 0 || aSeconds.length !== bSeconds.length) return null;
  return summarize(aSeconds.map((a, i) => bSeconds[i]! / a));
}
