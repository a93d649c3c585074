// Messages between the mount's serving thread (capture-thread.ts) and its capture thread
// (capture-worker.ts). Everything here is structured-cloneable; byte contents are transferred.
import type { Actor, ContentHash } from '../../engine/types.js';
import type { RemoveResult, SinkResult } from './sink.js';

export interface CaptureWorkerData {
  home: string;
  projectId: string;
  actor: Actor;
}

/** What the engine sink accepts, minus streams (those stay on the serving thread: capture-thread.ts). */
export type WorkerContent = Uint8Array | { file: string; knownHash?: ContentHash; adopt: boolean; size?: number };

export type CaptureRequest =
  | { id: number; op: 'write'; path: string; content: WorkerContent; executable: boolean; symlink: boolean }
  | { id: number; op: 'remove'; path: string; base?: string }
  | { id: number; op: 'rename'; from: string; to: string };

/** An error as it crossed the thread boundary; StrataErrors are rebuilt with their code. */
export interface WorkerError {
  name: string;
  message: string;
  code?: string;
  errno?: number;
  syscall?: string;
  details?: Record<string, unknown>;
}

export type CaptureReply =
  | { id: number; result: SinkResult | RemoveResult; error?: undefined }
  | { id: number; error: WorkerError; result?: undefined };

export type WorkerMessage =
  | { kind: 'ready' }
  | { kind: 'failed'; error: WorkerError }
  | { kind: 'replies'; replies: CaptureReply[] }
  | { kind: 'closed'; error?: WorkerError };
