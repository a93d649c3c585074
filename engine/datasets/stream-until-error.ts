// A stream that ends where its source failed, instead of failing: a dataset cut from it keeps every
// shard that arrived whole (each verified by its own hash as it was cut), so an upload or download
// cut midway resumes at the shard it reached instead of starting over. The caller rethrows
// `failure()` once the shards are kept. Only the last, truncated piece is a stray (gc drops it).
export interface UntilError {
  source: AsyncIterable<Uint8Array>;
  /** what the source failed with, once it has (undefined while it has not) */
  failure(): unknown;
}

export function streamUntilError(source: AsyncIterable<Uint8Array>): UntilError {
  let failed: { error: unknown } | null = null;
  async function* guarded(): AsyncGenerator<Uint8Array> {
    try {
      for await (const piece of source) yield piece;
    } catch (error) {
      failed = { error };
    }
  }
  return { source: guarded(), failure: () => failed?.error };
}
