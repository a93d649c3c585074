// A file made of stored objects (a dataset's shards, a large loose object), written on a chunking
// thread: read from where the store keeps them, each checked against its hash, written once, fsynced
// (assemble-worker-source.ts). The caller renames it into place.
import { StrataError } from '../errors.js';
import type { ContentHash } from '../types.js';
import { toError, type WorkerFailure } from './chunk-file.js';
import { acquireChunkThread, releaseChunkThread } from './chunk-threads.js';

export interface StoredSpan {
  file: string;
  offset: number;
  size: number;
  hash: ContentHash;
}

/** Creates `out` (it must not exist) with `mode`; resolves with its size once its bytes are durable. */
export async function assembleFile(spans: StoredSpan[], out: string, mode: number): Promise<number> {
  const thread = await acquireChunkThread();
  let reply: { size?: number; error?: WorkerFailure };
  try {
    reply = (await thread.request({ op: 'assemble', out, mode, spans })) as typeof reply;
  } finally {
    releaseChunkThread(thread);
  }
  if (reply.error !== undefined) {
    if (reply.error.code === 'CONTENT_CORRUPT') throw new StrataError('CONTENT_CORRUPT', { message: reply.error.message });
    throw toError(reply.error);
  }
  return reply.size!;
}
