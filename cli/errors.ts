// Every failure the CLI reports becomes a CliError: a stable code (the server's error code when the
// server sent one, else one of the CLI's own below), a message, and the process exit code. Scripts
// branch on the exit code, so the mapping is part of the CLI's contract (README "Exit codes").

import { isStrataError } from '../engine/errors.js';
import { sanitizeLine } from './output.js';

export const EXIT = {
  ok: 0,
  unexpected: 1,
  usage: 2,
  notFound: 3,
  conflict: 4,
  auth: 5,
  badInput: 6,
  unreachable: 7,
  fsckProblems: 8,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Codes the CLI raises itself (server codes come from engine/errors.ts). */
export type CliOwnCode =
  | 'USAGE'
  | 'NO_PROJECT'
  | 'NO_CREDENTIALS'
  | 'SERVER_UNREACHABLE'
  | 'UPLOAD_INTERRUPTED'
  | 'LISTEN_FAILED'
  | 'BAD_RESPONSE'
  | 'LOCAL_FILE_NOT_FOUND'
  | 'LOCAL_IO_ERROR'
  | 'CONFIG_INVALID'
  | 'FSCK_PROBLEMS'
  | 'GIT_FAILED'
  | 'NOT_A_STRATA_CLONE'
  | 'GIT_NOT_FAST_FORWARD'
  | 'GIT_WORK_TREE_CONFLICT'
  /** `strata checkout --to DIR`: DIR (or a file in it) is not empty and --force was not given; `strata git clone`: DIR is not empty */
  | 'TARGET_NOT_EMPTY'
  /** `strata checkout --to DIR`, `strata git clone`: DIR is in a project's directory (its daemon would version the files) */
  | 'TARGET_IN_PROJECT'
  /** `strata daemon install/uninstall`: systemctl --user answered with an error */
  | 'SYSTEMCTL_FAILED'
  | 'INTERNAL';

export interface CliErrorOptions {
  exitCode: ExitCode;
  status?: number;
  details?: Record<string, unknown>;
  requestId?: string;
  cause?: unknown;
}

export class CliError extends Error {
  readonly code: string;
  readonly exitCode: ExitCode;
  readonly status: number | undefined;
  readonly details: Record<string, unknown> | undefined;
  readonly requestId: string | undefined;

  constructor(code: CliOwnCode | (string & {}), message: string, options: CliErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CliError';
    this.code = code;
    this.exitCode = options.exitCode;
    this.status = options.status;
    this.details = options.details;
    this.requestId = options.requestId;
  }

  /** The `{"error": {...}}` document printed on stdout under --json (same shape as the API's). */
  toJson(): { error: Record<string, unknown> } {
    const error: Record<string, unknown> = { code: this.code, message: this.message, exitCode: this.exitCode };
    if (this.status !== undefined) error['status'] = this.status;
    if (this.details !== undefined) error['details'] = this.details;
    if (this.requestId !== undefined) error['requestId'] = this.requestId;
    return { error };
  }
}

/** HTTP status → exit code. 429 and 5xx are "unexpected": retrying may help, the input is fine. */
export function exitCodeForStatus(status: number): ExitCode {
  if (status === 404) return EXIT.notFound;
  if (status === 409) return EXIT.conflict;
  if (status === 401 || status === 403) return EXIT.auth;
  if (status === 400 || status === 413 || status === 415 || status === 422) return EXIT.badInput;
  return EXIT.unexpected;
}

export function usageError(message: string, details?: Record<string, unknown>): CliError {
  return new CliError('USAGE', message, { exitCode: EXIT.usage, ...(details ? { details } : {}) });
}

/** Normalizes anything thrown (CliError, engine StrataError from in-process commands, other). */
export function toCliError(error: unknown): CliError {
  if (error instanceof CliError) return error;
  if (isStrataError(error)) {
    return new CliError(error.code, error.message, {
      exitCode: exitCodeForStatus(error.status),
      status: error.status,
      ...(error.details ? { details: error.details } : {}),
      cause: error,
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new CliError('INTERNAL', message, { exitCode: EXIT.unexpected, cause: error });
}

/** The detail that names what was not found, conflicted or was refused, in the order worth saying. */
const SUBJECT_FIELDS = ['path', 'snapshotId', 'versionId', 'tag', 'projectId', 'keyId', 'orgId', 'identityId'] as const;

/**
 * The error as one line for a person: "No file at this path: analysis/fit.m". The server's catalogue
 * message is generic ("No file at this path"), the path is in `details`; without it a user running a
 * script over many files cannot tell which one failed. Newlines (commander's "(Did you mean ...?)"
 * comes on a line of its own) become spaces; control characters in a name from the server become '?'.
 */
export function humanMessage(error: CliError): string {
  let message = error.message.replace(/\s*\n\s*/g, ' ').trim();
  for (const field of SUBJECT_FIELDS) {
    const value = error.details?.[field];
    if (typeof value !== 'string' || value === '') continue;
    if (!message.includes(value)) message = `${message}: ${value}`;
    break;
  }
  return sanitizeLine(message);
}
