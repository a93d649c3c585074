// The team server as a sync worker sees it: the sync routes of the control API over HTTP, with the
// workstation's API key. Every failure is classified for the worker: retry later (network, 5xx,
// 429 with its Retry-After), pause until the user acts (401/403), or a refusal of this request. The
// key never appears in an error or a log line.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import type { ChunkWriter } from '../../engine/datasets/pump-dataset.js';
import type { FetchOutcome, FetchSource } from '../../engine/ports/content-store.js';
import type { SyncChange } from '../../engine/ports/metadata-repository.js';
import type { ComposedObject } from '../../engine/commands/sync-objects.js';
import type { SyncedSnapshot, SyncedSnapshotOutcome } from '../../engine/commands/sync-snapshots.js';
import type { SyncedOutcome, SyncedVersion } from '../../engine/commands/sync-versions.js';
import type { Page, Snapshot, SnapshotEntry } from '../../engine/types.js';

export type RemoteFailure = 'retry' | 'auth' | 'forbidden' | 'refused';

export class RemoteError extends Error {
  constructor(
    readonly kind: RemoteFailure,
    message: string,
    readonly status: number | null,
    readonly code: string | null,
    /** from Retry-After (429, 503) */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'RemoteError';
  }
}

export interface RemoteOptions {
  serverUrl: string;
  remoteProjectId: string;
  /** the workstation's API key for the server; or, without one, `token`: a signed-in person's */
  apiKey?: string;
  token?: () => Promise<string>;
  /** per request, long polls excepted (they add their wait) */
  timeoutMs?: number;
}

export interface ChangesPage {
  items: SyncChange[];
  cursor: string;
  more: boolean;
}

export class Remote {
  readonly #base: string;
  readonly #authorization: () => Promise<string>;
  readonly #timeoutMs: number;

  constructor(options: RemoteOptions) {
    this.#base = `${options.serverUrl.replace(/\/+$/, '')}/v1/projects/${encodeURIComponent(options.remoteProjectId)}`;
    const { apiKey, token } = options;
    if (apiKey !== undefined) {
      const header = `Bearer ${apiKey}`;
      this.#authorization = async () => header;
    } else if (token !== undefined) {
      this.#authorization = async () => {
        try {
          return `Bearer ${await token()}`;
        } catch (error) {
          // Not signed in, or the sign-in expired and could not be refreshed: the user must act.
          throw new RemoteError('auth', (error as Error).message, null, (error as { code?: string }).code ?? null);
        }
      };
    } else {
      throw new TypeError('Remote needs an apiKey or a token source');
    }
    this.#timeoutMs = options.timeoutMs ?? 60_000;
  }

  async missing(hashes: string[], signal?: AbortSignal): Promise<string[]> {
    const body = await this.#json<{ missing: string[] }>('POST', '/sync/objects/missing', { hashes }, signal);
    return body.missing;
  }

  async upload(hash: string, size: number, content: Readable, signal?: AbortSignal): Promise<void> {
    await this.#send('PUT', `/sync/objects/${encodeURIComponent(hash)}`, content, size, signal);
  }

  /**
   * A dataset's assembled bytes (its manifest sent before): the server cuts them into the manifest's
   * shards. `content` is a stream, or a writer that reuses its buffers once each is written
   * (engine/datasets/pump-dataset.ts).
   */
  async uploadDataset(manifestHash: string, size: number, content: Readable | ChunkWriter, signal?: AbortSignal): Promise<void> {
    await this.#send('PUT', `/sync/datasets/${encodeURIComponent(manifestHash)}`, content, size, signal);
  }

  /**
   * Small contents in one request: frames of `<hash> <size>\n<bytes>` (the server verifies each). The
   * pieces are written as they are: joined, then copied again by fetch, four batches in flight held
   * ~50 MiB of buffers in the drain of 100,000 versions.
   */
  async uploadBatch(objects: Array<{ hash: string; data: Uint8Array }>, signal?: AbortSignal): Promise<void> {
    const parts: Uint8Array[] = [];
    for (const { hash, data } of objects) parts.push(Buffer.from(`${hash} ${data.length}\n`, 'latin1'), data);
    await this.#sendParts('POST', '/sync/objects', parts, signal);
  }

  /** Objects as copies of content the project has plus new bytes (a dataset's delta): a JSON line, then the bytes. */
  async compose(objects: ComposedObject[], literal: Uint8Array[], signal?: AbortSignal): Promise<number> {
    return this.#sendParts('POST', '/sync/objects/compose', [Buffer.from(`${JSON.stringify({ objects })}\n`, 'utf8'), ...literal], signal);
  }

  async pushVersions(workstation: string, versions: SyncedVersion[], signal?: AbortSignal): Promise<SyncedOutcome[]> {
    const body = await this.#json<{ results: SyncedOutcome[] }>('POST', '/sync/versions', { workstation, versions }, signal);
    return body.results;
  }

  async changes(cursor: string, options: { limit: number; waitMs: number; signal?: AbortSignal }): Promise<ChangesPage> {
    const query = new URLSearchParams({ cursor, limit: String(options.limit), waitMs: String(options.waitMs) });
    const response = await this.#request('GET', `/sync/changes?${query}`, {
      ...(options.signal ? { signal: options.signal } : {}),
      timeoutMs: this.#timeoutMs + options.waitMs,
    });
    return (await response.json()) as ChangesPage;
  }

  /** A version's bytes, streamed (the caller verifies them against the record's hash as it stores them). */
  async read(versionId: string, signal?: AbortSignal): Promise<AsyncIterable<Uint8Array>> {
    return this.#receive(`/fs/read?versionId=${encodeURIComponent(versionId)}`, signal);
  }

  /**
   * What read() GETs, for a store that fetches the bytes on a thread of its own
   * (ContentStore.putDatasetFetch); its outcome is classified by fetchFailure.
   */
  async readSource(versionId: string, signal?: AbortSignal): Promise<FetchSource> {
    const authorization = await this.#authorization();
    return {
      url: `${this.#base}/fs/read?versionId=${encodeURIComponent(versionId)}`,
      headers: { authorization },
      timeoutMs: this.#timeoutMs,
      ...(signal ? { signal } : {}),
    };
  }

  /** A fetch of readSource's that did not bring the whole body, classified as read() would have failed; null when it did. */
  fetchFailure(outcome: FetchOutcome): RemoteError | null {
    if (outcome.kind === 'status') return failure(outcome.status, outcome.body, outcome.retryAfter);
    if (outcome.cut === null) return null;
    return unreachable(outcome.cut.code ?? outcome.cut.message);
  }

  /**
   * Many small contents in one request (POST sync/objects/read): yields each as its frame arrives,
   * in the order asked. An answer that names another hash, or ends inside or before an object, is a
   * failure to retry (a connection cut midway); what was yielded before it stands.
   */
  async *readBatch(hashes: string[], signal?: AbortSignal): AsyncGenerator<{ hash: string; data: Buffer }> {
    const response = await this.#request('POST', '/sync/objects/read', {
      body: JSON.stringify({ hashes }),
      headers: { 'content-type': 'application/json' },
      ...(signal ? { signal } : {}),
      // At most a few MiB: the whole answer within the per-request timeout (a stalled server is retried).
      timeoutMs: this.#timeoutMs,
    });
    const cut = (why: string) => new RemoteError('retry', `the server's batch of contents ${why}`, null, null);
    let pending = Buffer.alloc(0);
    let next = 0;
    const body = (response.body ?? (async function* () {})()) as AsyncIterable<Uint8Array>;
    try {
      for await (const chunk of body) {
        pending = pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([pending, chunk]);
        for (;;) {
          const newline = pending.indexOf(10);
          if (newline === -1) break;
          const header = /^(\S{1,100}) (\d{1,10})$/.exec(pending.subarray(0, newline).toString('latin1'));
          if (header === null || header[1] !== hashes[next]) throw cut(`is not what was asked for (object ${next})`);
          const size = Number(header[2]);
          if (pending.length < newline + 1 + size) break;
          yield { hash: header[1]!, data: Buffer.from(pending.subarray(newline + 1, newline + 1 + size)) };
          next += 1;
          pending = pending.subarray(newline + 1 + size);
        }
      }
    } catch (error) {
      if (signal?.aborted || error instanceof RemoteError) throw error;
      throw cut(`was cut off (${(error as Error).message})`);
    }
    if (next !== hashes.length || pending.length > 0) throw cut(`ended after ${next} of ${hashes.length} objects`);
  }

  /** Whether the server's project has this snapshot (a snapshot pulled from it, or pushed before a cut). */
  async hasSnapshot(snapshotId: string, signal?: AbortSignal): Promise<boolean> {
    try {
      await this.#request('GET', `/fs/snapshots/${encodeURIComponent(snapshotId)}`, { ...(signal ? { signal } : {}), timeoutMs: this.#timeoutMs });
      return true;
    } catch (error) {
      if (error instanceof RemoteError && error.status === 404) return false;
      throw error;
    }
  }

  async pushSnapshot(snapshot: SyncedSnapshot, signal?: AbortSignal): Promise<SyncedSnapshotOutcome> {
    return this.#json<SyncedSnapshotOutcome>('POST', '/sync/snapshots', snapshot, signal);
  }

  async snapshotsAfter(afterSeq: number, limit: number, signal?: AbortSignal): Promise<{ items: Snapshot[]; more: boolean }> {
    const response = await this.#request('GET', `/sync/snapshots?afterSeq=${afterSeq}&limit=${limit}`, { ...(signal ? { signal } : {}), timeoutMs: this.#timeoutMs });
    return (await response.json()) as { items: Snapshot[]; more: boolean };
  }

  async snapshotEntries(snapshotId: string, cursor: string | null, signal?: AbortSignal): Promise<Page<SnapshotEntry>> {
    const query = new URLSearchParams({ limit: '1000', ...(cursor === null ? {} : { cursor }) });
    const response = await this.#request('GET', `/fs/snapshots/${encodeURIComponent(snapshotId)}/entries?${query}`, {
      ...(signal ? { signal } : {}),
      timeoutMs: this.#timeoutMs,
    });
    return (await response.json()) as Page<SnapshotEntry>;
  }

  async tags(signal?: AbortSignal): Promise<Array<{ tag: string; snapshotId: string }>> {
    const response = await this.#request('GET', '/fs/tags', { ...(signal ? { signal } : {}), timeoutMs: this.#timeoutMs });
    return ((await response.json()) as { items: Array<{ tag: string; snapshotId: string }> }).items;
  }

  /** The project's retention setting on the server (versions kept per path; 0 = unlimited). */
  async retention(signal?: AbortSignal): Promise<number> {
    const response = await this.#request('GET', '/fs/retention', { ...(signal ? { signal } : {}), timeoutMs: this.#timeoutMs });
    return ((await response.json()) as { maxVersions: number }).maxVersions;
  }

  async setRetention(maxVersions: number, signal?: AbortSignal): Promise<void> {
    await this.#json('POST', '/fs/retention', { maxVersions }, signal);
  }

  async addTag(snapshotId: string, tag: string, signal?: AbortSignal): Promise<void> {
    await this.#json('POST', `/fs/snapshots/${encodeURIComponent(snapshotId)}/tags`, { tag }, signal);
  }

  async removeTag(tag: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.#request('DELETE', `/fs/tags/${encodeURIComponent(tag)}`, { ...(signal ? { signal } : {}), timeoutMs: this.#timeoutMs });
    } catch (error) {
      if (!(error instanceof RemoteError && error.status === 404)) throw error;
    }
  }

  /** Content the project has, by hash (a dataset's manifest or shard); the caller verifies it as it stores it. */
  async object(hash: string, signal?: AbortSignal): Promise<AsyncIterable<Uint8Array>> {
    return this.#receive(`/sync/objects/${encodeURIComponent(hash)}`, signal);
  }

  /**
   * A streamed GET over node:http, for the same reason as #send: through fetch's web streams a clone
   * of a 300 MB dataset came down at ~20 MB/s on a loaded machine. Resolves once the server answered
   * 2xx (its body, as Buffers); a quiet connection is cut after the per-request timeout.
   */
  async #receive(path: string, signal?: AbortSignal): Promise<AsyncIterable<Uint8Array>> {
    const authorization = await this.#authorization();
    const url = new URL(`${this.#base}${path}`);
    return new Promise((resolve, reject) => {
      const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
        method: 'GET',
        headers: { authorization },
        ...(signal ? { signal } : {}),
        timeout: this.#timeoutMs,
      });
      const failed = (error: Error) =>
        signal?.aborted || error instanceof RemoteError ? error : unreachable((error as NodeJS.ErrnoException).code ?? error.message);
      request.on('timeout', () => request.destroy(new Error('the connection went quiet')));
      request.on('error', (error) => reject(failed(error)));
      request.on('response', (response) => {
        const status = response.statusCode ?? 0;
        if (status >= 200 && status < 300) {
          // Past the answer, a failure of the body (cut, quiet) surfaces in the consumer's iteration, classified the same way.
          resolve(
            (async function* () {
              try {
                for await (const chunk of response) yield chunk as Buffer;
              } catch (error) {
                throw failed(error as Error);
              }
            })(),
          );
          return;
        }
        const pieces: Buffer[] = [];
        response.on('data', (piece: Buffer) => pieces.push(piece));
        response.on('error', (error) => reject(failed(error)));
        response.on('end', () => reject(failure(status, Buffer.concat(pieces).toString('utf8'), (response.headers['retry-after'] as string | undefined) ?? null)));
      });
      request.end();
    });
  }

  async #json<T>(method: string, path: string, json: unknown, signal?: AbortSignal): Promise<T> {
    const response = await this.#request(method, path, {
      body: JSON.stringify(json),
      headers: { 'content-type': 'application/json' },
      ...(signal ? { signal } : {}),
      timeoutMs: this.#timeoutMs,
    });
    return (await response.json()) as T;
  }

  async #request(
    method: string,
    path: string,
    options: { body?: string; headers?: Record<string, string>; signal?: AbortSignal; timeoutMs: number },
  ): Promise<Response> {
    const signals = [options.signal, options.timeoutMs > 0 ? AbortSignal.timeout(options.timeoutMs) : undefined].filter((s) => s !== undefined);
    let response: Response;
    try {
      const authorization = await this.#authorization();
      response = await fetch(`${this.#base}${path}`, {
        method,
        headers: { authorization, ...options.headers },
        ...(options.body === undefined ? {} : { body: options.body }),
        ...(signals.length > 0 ? { signal: AbortSignal.any(signals) } : {}),
      } as RequestInit);
    } catch (error) {
      if (options.signal?.aborted || error instanceof RemoteError) throw error;
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const reason = cause?.code ?? cause?.message ?? (error as Error).message;
      throw unreachable(reason);
    }
    if (response.ok) return response;
    throw failure(response.status, await response.text().catch(() => ''), response.headers.get('retry-after'));
  }

  /**
   * A streamed body (a large content, a dataset's bytes) over node:http rather than fetch: fetch copied
   * every piece through web streams, and pushing 512 MiB cost the daemon 8 s of CPU; node:http moves
   * 512 MiB over loopback in 0.5 s (measured in-process). Same classification of failures.
   */
  /** A body made of pieces already in memory, written one after the other; resolves to its length. */
  async #sendParts(method: string, path: string, parts: Uint8Array[], signal?: AbortSignal): Promise<number> {
    const size = parts.reduce((sum, part) => sum + part.length, 0);
    await this.#send(method, path, Readable.from(parts, { objectMode: false }), size, signal);
    return size;
  }

  async #send(method: string, path: string, body: Readable | ChunkWriter, size: number, signal?: AbortSignal): Promise<void> {
    const authorization = await this.#authorization();
    const url = new URL(`${this.#base}${path}`);
    const timeoutMs = this.#timeoutMs + Math.ceil(size / 1_000); // ≥ 1 MB/s
    return new Promise<void>((resolve, reject) => {
      const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
        method,
        headers: { authorization, 'content-type': 'application/octet-stream', 'content-length': String(size) },
        ...(signal ? { signal } : {}),
        timeout: this.#timeoutMs,
      });
      const overall = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      // Stops a writer waiting for its buffers back from a request that failed (a destroyed
      // request may never call back the writes it had queued).
      const writing = new AbortController();
      const settle = (error: Error | null) => {
        clearTimeout(overall);
        // A success can arrive before the body stream saw its end (the server counts Content-Length
        // bytes): the pipe then finishes the request; unpiped, the request stayed open and the stream
        // (a file's descriptor) with it.
        if (error !== null && body instanceof Readable) body.unpipe(request);
        if (error !== null) writing.abort(error);
        if (error === null) resolve();
        else if (signal?.aborted || error instanceof RemoteError) reject(error);
        else reject(unreachable((error as NodeJS.ErrnoException).code ?? error.message));
      };
      request.on('timeout', () => request.destroy(new Error('the connection went quiet')));
      request.on('error', settle);
      if (body instanceof Readable) body.on('error', (error) => request.destroy(error));
      request.on('response', (response) => {
        const pieces: Buffer[] = [];
        response.on('data', (piece: Buffer) => pieces.push(piece));
        response.on('error', settle);
        response.on('end', () => {
          const status = response.statusCode ?? 0;
          if (status >= 200 && status < 300) settle(null);
          else settle(failure(status, Buffer.concat(pieces).toString('utf8'), (response.headers['retry-after'] as string | undefined) ?? null));
        });
      });
      if (body instanceof Readable) {
        body.pipe(request);
        return;
      }
      // Each piece is handed back to the writer by the write's callback, once the socket has it.
      body({ write: (chunk, done) => void request.write(chunk, done) }, writing.signal).then(
        () => request.end(),
        (error: unknown) => request.destroy(error instanceof Error ? error : new Error(String(error))),
      );
    });
  }
}

/** No answer from the server (a refused or cut connection, a timeout): retried. `reason`: the code, else the message. */
function unreachable(reason: string): RemoteError {
  return new RemoteError('retry', `the server is unreachable (${reason})`, null, null);
}

/** A server's answer that is not a success, classified for the worker (its message names the server's code). */

function failure(status: number, text: string, retryAfterHeader: string | null): RemoteError {
  let code: string | null = null;
  let message = `HTTP ${status}`;
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
    code = body.error?.code ?? null;
    if (body.error?.message) message = `${body.error.message} (HTTP ${status})`;
  } catch {
    // not the server's error body (a proxy's page): the status says enough
  }
  const retryAfter = parseRetryAfter(retryAfterHeader);
  if (status === 401) return new RemoteError('auth', `the server refused the credential: ${message}`, 401, code);
  if (status === 403) return new RemoteError('forbidden', `not permitted on the server: ${message}`, 403, code);
  if (status === 429 || status === 408 || status >= 500) return new RemoteError('retry', `the server answered ${message}`, status, code, retryAfter);
  return new RemoteError('refused', message, status, code);
}

function parseRetryAfter(value: string | null): number | null {
  if (value === null) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, 10 * 60_000);
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, Math.min(at - Date.now(), 10 * 60_000)) : null;
}

/** Exponential backoff with full jitter: attempt 1 → up to 0.5 s, doubling to a 60 s cap. */
export function backoffMs(attempt: number, retryAfterMs: number | null = null): number {
  const cap = Math.min(60_000, 500 * 2 ** Math.max(0, attempt - 1));
  const jittered = cap / 2 + Math.random() * (cap / 2);
  return Math.max(jittered, retryAfterMs ?? 0);
}
