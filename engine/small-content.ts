// Reading the head of a stream to see whether it is small (a write whose content may ride with its
// version record, ContentStore.contentWithRecordMaxBytes), without losing the rest when it is not.

/** The whole content when the stream ends within `maxBytes`; otherwise a stream of all of it. */
export async function takeIfSmall(source: AsyncIterable<Uint8Array>, maxBytes: number): Promise<{ small: Buffer } | { stream: AsyncIterable<Uint8Array> }> {
  const iterator = source[Symbol.asyncIterator]();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const next = await iterator.next();
    if (next.done === true) return { small: Buffer.concat(chunks, size) };
    chunks.push(next.value);
    size += next.value.length;
    if (size > maxBytes) return { stream: resume(chunks, iterator) };
  }
}

/** The chunks already taken, then the rest; a consumer that stops early closes the source too. */
export async function* resume(chunks: Uint8Array[], rest: AsyncIterator<Uint8Array>): AsyncGenerator<Uint8Array> {
  let done = false;
  try {
    yield* chunks;
    for (;;) {
      const next = await rest.next();
      if (next.done === true) {
        done = true;
        return;
      }
      yield next.value;
    }
  } finally {
    if (!done) await rest.return?.();
  }
}
