// Negative errno values as the binding expects them, and the mapping of failures to them.
import { StrataError } from '../../engine/errors.js';

export const E = {
  PERM: -1,
  NOENT: -2,
  IO: -5,
  BADF: -9,
  AGAIN: -11,
  ACCES: -13,
  EXIST: -17,
  XDEV: -18,
  NOTDIR: -20,
  ISDIR: -21,
  INVAL: -22,
  FBIG: -27,
  NOSPC: -28,
  ROFS: -30,
  NAMETOOLONG: -36,
  NOTEMPTY: -39,
  BUSY: -16,
  RANGE: -34,
  TOOBIG: -7,
  NODATA: -61,
  NOTSUP: -95,
  STALE: -116,
} as const;

/** An expected refusal inside an operation: carries the errno to answer with. */
export class FsError extends Error {
  constructor(
    readonly errno: number,
    message?: string,
  ) {
    super(message ?? `errno ${errno}`);
  }
}

/**
 * Refusals are frequent (every lookup of a name that does not exist yet is an ENOENT) and need no
 * stack: one shared instance per errno instead of a new Error — capturing stacks showed in profiles.
 */
const SHARED = new Map<number, FsError>();

export function fail(errno: number, message?: string): never {
  if (message !== undefined) throw new FsError(errno, message);
  let error = SHARED.get(errno);
  if (error === undefined) {
    error = new FsError(errno);
    SHARED.set(errno, error);
  }
  throw error;
}

/** What the kernel gets for a failure: node errno errors keep theirs; store trouble is EIO. */
export function toErrno(error: unknown): number {
  if (error instanceof FsError) return error.errno;
  if (error instanceof StrataError) {
    switch (error.code) {
      case 'PATH_NOT_FOUND':
      case 'CONTENT_NOT_FOUND':
        return E.NOENT;
      case 'INVALID_PATH':
        return E.INVAL;
      case 'PATH_IS_DIRECTORY':
        return E.ISDIR;
      case 'PATH_EXISTS':
        return E.NOTDIR;
      case 'BODY_TOO_LARGE':
        return E.FBIG;
      case 'DISK_FULL':
        return E.NOSPC;
      default:
        return E.IO;
    }
  }
  const errno = (error as NodeJS.ErrnoException | null)?.errno;
  return typeof errno === 'number' && errno < 0 ? errno : E.IO;
}
