// The body of a response whose bytes a writer pushes into the HTTP response itself, reusing each
// buffer once the socket's write callback says it was written (engine/datasets/pump-dataset.ts).
//
// Fastify sends a stream body by `payload.pipe(res)` and watches the payload with end-of-stream, so
// this is a Readable that never yields data: its pipe() runs the writer against `res`, then ends
// `res` and itself (fastify's request ends as for any stream); a writer failure destroys it (fastify
// destroys the response, or answers with the error if no byte was sent); a closed response destroys
// it (fastify's end-of-stream on `res`), which aborts the writer. Only piping is supported: nothing
// else may read the pooled chunks, whose memory is reused.
import { Readable, type Writable } from 'node:stream';
import type { ChunkSink, ChunkWriter } from '../engine/datasets/pump-dataset.js';

export class SinkDrivenStream extends Readable {
  readonly #abort = new AbortController();
  #started = false;

  constructor(private readonly writer: ChunkWriter) {
    super();
  }

  override _read(): void {
    // Data only ever goes through pipe(); there is nothing to read.
  }

  override pipe<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T {
    if (this.#started) throw new TypeError('SinkDrivenStream can be piped once');
    this.#started = true;
    const res = destination as unknown as Writable;
    const sink: ChunkSink = { write: (chunk, done) => void res.write(chunk, done) };
    this.writer(sink, this.#abort.signal).then(
      () => {
        if (options?.end !== false) res.end();
        // Ends this (empty) readable so that end-of-stream watchers see it finish.
        this.push(null);
        this.resume();
      },
      (error: unknown) => this.destroy(error instanceof Error ? error : new Error(String(error))),
    );
    return destination;
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#abort.abort(error ?? new Error('The response closed before the body was sent'));
    callback(error);
  }
}
