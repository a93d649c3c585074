// One catalogue for every error Strata reports. Each code is stable: clients match on it, so a code is
// never renamed and a retired code is never reused (add it to RETIRED_CODES instead of deleting it).
// Caller misuse of an API (wrong argument types from our own code) is a TypeError, not a StrataError.

export const ERROR_CATALOGUE = {
  // 400 / 422: bad input, always naming the field
  INVALID_PATH: { status: 422, message: 'The path is not a valid project path' },
  INVALID_ARGUMENT: { status: 422, message: 'An argument is invalid' },
  INVALID_BODY: { status: 400, message: 'The request body is invalid' },
  INVALID_QUERY: { status: 400, message: 'The query string is invalid' },
  INVALID_CURSOR: { status: 400, message: 'The pagination cursor is invalid' },
  INVALID_SYMLINK_TARGET: { status: 422, message: 'A symbolic link target must be 1 to 4,095 bytes, none of them NUL' },
  INVALID_UTF8: { status: 400, message: 'The input is not valid UTF-8' },
  BODY_TOO_LARGE: { status: 413, message: 'The request body is too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'The content type is not supported' },
  MALFORMED_REQUEST: { status: 400, message: 'The HTTP request is malformed' },
  // 401 / 403: one identical 401 for every kind of bad credential
  UNAUTHENTICATED: { status: 401, message: 'Authentication required' },
  FORBIDDEN: { status: 403, message: 'Not permitted' },
  FORBIDDEN_HOST: { status: 403, message: 'The Host header is not a loopback name' },
  FORBIDDEN_ORIGIN: { status: 403, message: 'Browser origins are not accepted by this API' },
  // 404: missing, or not visible to the caller
  NOT_FOUND: { status: 404, message: 'Not found' },
  PROJECT_NOT_FOUND: { status: 404, message: 'Project not found' },
  PATH_NOT_FOUND: { status: 404, message: 'No file at this path' },
  VERSION_NOT_FOUND: { status: 404, message: 'Version not found' },
  SNAPSHOT_NOT_FOUND: { status: 404, message: 'Snapshot not found' },
  TAG_NOT_FOUND: { status: 404, message: 'Tag not found' },
  KEY_NOT_FOUND: { status: 404, message: 'API key not found' },
  ORG_NOT_FOUND: { status: 404, message: 'Organization not found' },
  USER_NOT_FOUND: { status: 404, message: 'User not found' },
  CONTENT_NOT_FOUND: { status: 404, message: 'Content not found in the store' },
  CONTENT_HASH_MISMATCH: { status: 422, message: 'The uploaded bytes do not hash to the hash they were sent as' },
  TOO_MANY_HASHES: { status: 422, message: 'Too many hashes in one request' },
  BATCH_TOO_LARGE: { status: 422, message: 'The objects asked for add up to more bytes than one batch carries (ask for fewer, or read a large one on its own)' },
  SNAPSHOT_PINS_MISSING: { status: 422, message: 'The snapshot pins versions the project does not have (send them first, or send it as partial)' },
  CONTENT_NOT_AVAILABLE: { status: 422, message: 'The project neither references this content nor was sent it' },
  VERSION_ID_TAKEN: { status: 409, message: 'The version id is used by another version' },
  SNAPSHOT_ID_TAKEN: { status: 409, message: 'The snapshot id is used by another project' },
  // 409: conflicts
  STALE_BASE_VERSION: { status: 409, message: 'The file changed since the base version' },
  TAG_TAKEN: { status: 409, message: 'The tag is already used in this project' },
  PATH_EXISTS: { status: 409, message: 'A file already exists at the destination path' },
  PATH_IS_DIRECTORY: { status: 409, message: 'The path is a directory' },
  PATH_THROUGH_SYMLINK: { status: 409, message: 'A directory on the way to this path is a symbolic link; nothing is written through a link' },
  VERSION_IS_TOMBSTONE: { status: 409, message: 'The version is a deletion and has no content' },
  ALREADY_BOOTSTRAPPED: { status: 409, message: 'This home already has an organization' },
  // maintenance commands (fsck, gc, admin) never migrate: they refuse storage that is empty or behind
  NO_STRATA_DATA: { status: 409, message: 'The storage holds no Strata data: create it with `strata serve --migrate-only`, or restore a backup into it' },
  SCHEMA_NOT_CURRENT: { status: 409, message: 'The metadata database is at an older schema version: migrate it first (`strata serve --migrate-only` for a server, `strata daemon` for a workstation home)' },
  KEY_REVOKED: { status: 409, message: 'The API key is already revoked' },
  MEMBERSHIP_LAST_OWNER: { status: 409, message: 'The organization must keep at least one owner' },
  KEY_ROTATED: { status: 409, message: 'The API key was already rotated' },
  // 416
  RANGE_NOT_SATISFIABLE: { status: 416, message: 'The requested range is not satisfiable' },
  // 429
  RATE_LIMITED: { status: 429, message: 'Too many requests' },
  // 500: our fault or the storage's
  CONTENT_CORRUPT: { status: 500, message: 'Stored content does not match its hash' },
  STORAGE_ERROR: { status: 500, message: 'The storage backend failed' },
  INTERNAL: { status: 500, message: 'Internal error' },
  // 507: the disk (or the user's quota) is full — the user's to fix, so said in full, never hidden as a 500
  DISK_FULL: { status: 507, message: 'No space left on the disk (or in the quota) that holds the data: free some space and try again' },
  // 503
  SHUTTING_DOWN: { status: 503, message: 'The service is shutting down' },
  NOT_READY: { status: 503, message: 'A storage backend the service needs is not reachable' },
  // daemon (issue 3)
  FUSE_UNAVAILABLE: { status: 503, message: 'FUSE is not available here; use `strata watch DIR` instead' },
  WATCH_LIMIT_REACHED: { status: 503, message: 'The inotify watch limit is exhausted' },
  PROJECT_DIR_TAKEN: { status: 409, message: 'The directory already belongs to a project' },
  PROJECT_ALREADY_LINKED: { status: 409, message: 'The project is already linked to another server project' },
  SYNC_NOT_LINKED: { status: 404, message: 'The project is not linked to a server' },
  SYNC_SERVER_REFUSED: { status: 502, message: 'The sync server refused the request' },
  DAEMON_STATE_ERROR: { status: 500, message: 'The daemon state could not be read or written' },
  DAEMON_RUNNING: { status: 409, message: 'A Strata daemon already runs for this home' },
  // server homes: `strata serve` and migrate-storage hold <home>/server.lock (server/home-lock.ts)
  HOME_IN_USE: { status: 409, message: 'Another Strata process (`strata serve` or `strata admin migrate-storage`) holds this home; stop it first' },
  // any home: it is used from one host at a time (server/home-claim.ts, issue 38)
  HOME_HELD_BY_HOST: { status: 409, message: 'The Strata home is in use on another host; a home is used from one host at a time' },
  WRITE_BACK_PENDING: { status: 409, message: "The directory does not hold the project's latest files yet: its in-place mount ended without writing them back" },
  // git interop (issue 4)
  GIT_STREAM_INVALID: { status: 400, message: 'The git fast-import stream is invalid' },
  // datasets (issue 4)
  NOT_A_DATASET: { status: 404, message: 'This file is not stored as a dataset' },
  DATASET_MANIFEST_INVALID: { status: 500, message: 'A stored dataset manifest is not valid' },
  GIT_UNKNOWN_COMMIT: { status: 409, message: "The commit is not in this project's snapshot chain (the histories have diverged)" },
  GIT_NOT_FAST_FORWARD: { status: 409, message: "The pushed history does not continue the project's snapshot chain" },
  GIT_NOT_LINEAR: { status: 409, message: 'Only a linear history on refs/heads/main can be received (no merges, no other branches)' },
  GIT_UNSNAPSHOTTED_CHANGES: { status: 409, message: 'The project has changes since its last snapshot; snapshot them and pull first' },
  // identity (issue 16)
  IDENTITY_LINK_TAKEN: { status: 409, message: 'This sign-in already belongs to a user' },
  SIGN_IN_FAILED: { status: 400, message: 'The sign-in could not be completed; start it again' },
  SIGN_IN_NOT_CONFIGURED: { status: 404, message: 'This server has no sign-in configured: use an API key (STRATA_API_KEY)' },
  SSO_CONNECTION_NOT_FOUND: { status: 404, message: 'SSO connection not found' },
  SSO_DOMAIN_TAKEN: { status: 409, message: 'The domain is already verified for another SSO connection' },
  SSO_ISSUER_TAKEN: { status: 409, message: 'Another active SSO connection uses this issuer' },
  SSO_DOMAIN_NOT_VERIFIED: { status: 409, message: 'The DNS TXT record with the verification token was not found' },
  SSO_NOT_READY: { status: 409, message: 'An SSO connection is activated only after a verified domain and a successful test sign-in' },
  SSO_TEST_FAILED: { status: 422, message: 'The test token was not a valid access token of this connection' },
  SCIM_NOT_CONFIGURED: { status: 404, message: 'SCIM provisioning is not set up for this organization' },
  SCIM_USER_NOT_FOUND: { status: 404, message: 'User not found' },
  SCIM_GROUP_NOT_FOUND: { status: 404, message: 'Group not found' },
  SCIM_USERNAME_TAKEN: { status: 409, message: 'Another user has this userName' },
  SCIM_GROUP_NAME_TAKEN: { status: 409, message: 'Another group has this displayName' },
  SCIM_VERSION_MISMATCH: { status: 409, message: 'The resource changed meanwhile; read it again' },
  SCIM_INVALID_FILTER: { status: 400, message: 'The filter is not supported: use attribute eq "value", joined with and' },
  SCIM_INVALID_PATH: { status: 400, message: 'The PATCH path is not supported' },
  SCIM_INVALID_VALUE: { status: 400, message: 'A value in the request is invalid' },
  PREFERENCES_TOO_LARGE: { status: 422, message: 'Preferences are limited to 16 KiB of JSON' },
  DIFF_TOO_LARGE: { status: 422, message: 'Too large to compare line by line: download the versions instead' },
  GIT_NOT_REPRESENTABLE: { status: 422, message: 'A pushed commit cannot be stored so that it exports to the same commit id' },
  // short ids (issue 18)
  AMBIGUOUS_ID: { status: 422, message: 'The abbreviated id matches more than one; give more digits' },
} as const satisfies Record<string, { status: number; message: string }>;

/** Codes that were used by an earlier release and must never be given a new meaning. */
export const RETIRED_CODES: readonly string[] = [];

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export interface StrataErrorOptions {
  message?: string;
  details?: Record<string, unknown>;
  cause?: unknown;
}

export class StrataError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, options: StrataErrorOptions = {}) {
    const entry = ERROR_CATALOGUE[code];
    super(options.message ?? entry.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'StrataError';
    this.code = code;
    this.status = entry.status;
    this.details = options.details;
  }
}

export function isStrataError(value: unknown, code?: ErrorCode): value is StrataError {
  return value instanceof StrataError && (code === undefined || value.code === code);
}

/** errno and SQLite codes that mean the disk or the user's quota is full */
const NO_ROOM_CODES = new Set(['ENOSPC', 'EDQUOT', 'SQLITE_FULL']);

/**
 * Whether `error` says the disk (or quota) had no room: DISK_FULL, an errno ENOSPC/EDQUOT, SQLite's
 * SQLITE_FULL — directly, in a StrataError's details, or along its causes. Room may come back, so
 * callers retry these; one at a time may fit where several together did not.
 */
export function isNoRoom(error: unknown): boolean {
  type Failure = { code?: unknown; cause?: unknown; details?: { code?: unknown; sqliteCode?: unknown } } | null | undefined;
  for (let e = error as Failure, depth = 0; e !== undefined && e !== null && depth < 5; e = e.cause as Failure, depth++) {
    if (e.code === 'DISK_FULL' || NO_ROOM_CODES.has(e.code as string)) return true;
    if (NO_ROOM_CODES.has(e.details?.code as string) || NO_ROOM_CODES.has(e.details?.sqliteCode as string)) return true;
  }
  return false;
}

/**
 * DISK_FULL for a failure `isNoRoom` recognizes: `what` says what could not be written (it may name a
 * local path: the HTTP layer answers with the catalogue's message, never this one; see toPublicError).
 */
export function diskFullError(what: string, cause: unknown, details: Record<string, unknown> = {}): StrataError {
  const code = details['code'] ?? details['sqliteCode'] ?? (cause as { code?: unknown } | null | undefined)?.code;
  const errno = typeof code === 'string' && NO_ROOM_CODES.has(code) ? code : 'ENOSPC';
  return new StrataError('DISK_FULL', { message: `${what}: no space left on the disk (${errno}); free some space and try again`, details: { ...details, code: errno }, cause });
}

/**
 * The store's or the metadata database's failure: DISK_FULL when `details.code` or the cause says
 * the disk (or quota) is full, else STORAGE_ERROR — one rule for every place the storage fails.
 */
export function storageFailure(message: string, options: { details?: Record<string, unknown>; cause?: unknown } = {}): StrataError {
  if (isNoRoom({ details: options.details, cause: options.cause })) return diskFullError(message, options.cause, options.details);
  return new StrataError('STORAGE_ERROR', { message, ...options });
}
