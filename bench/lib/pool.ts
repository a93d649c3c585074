// Bounded concurrency: `count` tasks, at most `concurrency` in flight.

export async function runPool(count: number, concurrency: number, task: (index: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      await task(index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

/** Deterministic pseudo-random numbers (mulberry32): the same seed gives the same files in every run. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** `size` pseudo-random bytes from `seed`. */
export function pseudoRandomBytes(seed: number, size: number): Uint8Array {
  const next = prng(seed);
  const out = new Uint8Array(size);
  const words = new Uint32Array(out.buffer, 0, Math.floor(size / 4));
  for (let i = 0; i < words.length; i++) words[i] = next();
  for (let i = words.length * 4; i < size; i++) out[i] = next() & 0xff;
  return out;
}
