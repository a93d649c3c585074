// Configuration of the S3 content store: options, the `s3://` URL form, credentials, object keys, and
// how S3 failures become StrataErrors. Secrets (the secret key, a session token, a URL's password)
// never appear in a message: errors name only the bucket, the endpoint (without userinfo) and the S3
// error code, and any secret that a lower layer echoed is masked out of what we copy.
import { randomUUID } from 'node:crypto';
import type { ObjectGuard } from '../ports/object-guard.js';
import { readFileSync } from 'node:fs';
import type { S3Client } from '@aws-sdk/client-s3';
import { StrataError } from '../errors.js';
import type { ContentHash } from '../types.js';
import type { HashWorkerPool } from './hash-worker-pool.js';
import type { DigestPool } from './s3-content-store-digest.js';

export interface S3ContentStoreOptions {
  bucket: string;
  /** key prefix inside the bucket ('' for none); a trailing '/' is added */
  prefix?: string;
  /** an S3-compatible endpoint (MinIO, s3rver...); default: AWS for the region */
  endpoint?: string;
  /** default: AWS_REGION, else us-east-1 */
  region?: string;
  /** without them: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or *_FILE), else the SDK's default chain */
  accessKeyId?: string;
  secretAccessKey?: string;
  /** with temporary credentials */
  sessionToken?: string;
  /** default: true with a custom endpoint (most S3-compatibles have no virtual-host DNS), false on AWS */
  forcePathStyle?: boolean;
  /** multipart part size in bytes, at least 5 MiB (S3's minimum); default 16 MiB */
  partSize?: number;
  /** parts of one upload sent at once; memory per large upload is about (this + 1) × partSize; default 3 */
  partsInFlight?: number;
  /** local scratch space for dataset uploads (putDatasetStream); default: the OS temp directory */
  scratchDir?: string;
  /**
   * When replicas share the bucket (ports/object-guard.ts): every existence check touches the hash
   * first, and the store offers collect(), which deletes through the guard.
   */
  guard?: ObjectGuard;
  /** a request whose connection is idle (no byte either way) this long fails; default 120 s */
  idleTimeoutMs?: number;
  /** open() fails when the bucket does not answer its check within this; default 15 s */
  openTimeoutMs?: number;
}

export const MIB = 1024 * 1024;
export const MIN_PART_SIZE = 5 * MIB;
export const MAX_PART_SIZE = 5 * 1024 * MIB;
const DEFAULT_PART_SIZE = 16 * MIB;
const DEFAULT_PARTS_IN_FLIGHT = 3;

/** Where errors point: enough to find the bucket, nothing that grants access to it. */
export interface S3Where {
  readonly bucket: string;
  readonly endpoint: string;
  /** strings masked out of any message we copy from a lower layer */
  readonly secrets: readonly string[];
}

export interface S3Context extends S3Where {
  readonly client: S3Client;
  /** '' or ending in '/' */
  readonly prefix: string;
  readonly partSize: number;
  readonly partsInFlight: number;
  readonly digests: DigestPool;
  readonly hashPool: HashWorkerPool;
  readonly now: () => number;
  readonly guard: ObjectGuard | undefined;
}

function invalid(message: string, field: string): StrataError {
  return new StrataError('INVALID_ARGUMENT', { message, details: { field } });
}

const QUERY_OPTIONS = new Set(['endpoint', 'region', 'forcePathStyle', 'partSize', 'partsInFlight', 'scratchDir']);

/**
 * `s3://BUCKET/optional/prefix?endpoint=http://127.0.0.1:9000&region=us-east-1&forcePathStyle=true`.
 * Credentials belong in the environment: given `env`, they are read from it (credentialsFromEnv);
 * without it, openS3ContentStore reads process.env. Userinfo (`s3://KEY:SECRET@bucket`) is accepted
 * for local setups and wins over the environment; credentials in the query are refused (query strings
 * end up in logs and shell histories). No message here quotes the URL, which may hold a secret.
 */
export function parseObjectsUrl(url: string, env?: NodeJS.ProcessEnv): S3ContentStoreOptions {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid('The objects URL is not a valid URL (expected s3://BUCKET/prefix?endpoint=...)', 'url');
  }
  if (parsed.protocol !== 's3:') throw invalid(`The objects URL must start with s3:// (got ${parsed.protocol.slice(0, 10)})`, 'url');
  const bucket = decodeURIComponent(parsed.hostname);
  if (bucket === '') throw invalid('The objects URL names no bucket (s3://BUCKET/...)', 'url');
  const options: S3ContentStoreOptions = { bucket };
  const prefix = decodeURIComponent(parsed.pathname.replace(/^\/+/, ''));
  if (prefix !== '') options.prefix = prefix;
  if (parsed.username !== '' || parsed.password !== '') {
    if (parsed.username === '' || parsed.password === '') throw invalid('The objects URL has half a credential in its userinfo', 'url');
    options.accessKeyId = decodeURIComponent(parsed.username);
    options.secretAccessKey = decodeURIComponent(parsed.password);
  }
  for (const [name, value] of parsed.searchParams) {
    if (!QUERY_OPTIONS.has(name)) {
      const hint = /key|secret|token|password|credential/i.test(name) ? ': credentials come from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)' : '';
      throw invalid(`The objects URL has an unknown query parameter "${name.slice(0, 40)}"${hint}`, 'url');
    }
    if (name === 'endpoint' || name === 'region' || name === 'scratchDir') options[name] = value;
    else if (name === 'forcePathStyle') {
      if (!['true', 'false', '1', '0'].includes(value)) throw invalid('forcePathStyle must be true or false', 'url');
      options.forcePathStyle = value === 'true' || value === '1';
    } else options[name as 'partSize' | 'partsInFlight'] = Number(value);
  }
  if (env !== undefined && options.accessKeyId === undefined) {
    const credentials = credentialsFromEnv(env);
    if (credentials !== null) Object.assign(options, credentials);
  }
  return options;
}

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, each also as NAME_FILE (a path, e.g. a container secret). */
export function credentialsFromEnv(env: NodeJS.ProcessEnv = process.env): Credentials | null {
  const read = (name: string): string | undefined => {
    const direct = env[name];
    if (direct !== undefined && direct !== '') return direct;
    const file = env[`${name}_FILE`];
    if (file === undefined || file === '') return undefined;
    try {
      // Synchronous: a secret file of a few bytes, read once at start-up.
      return readFileSync(file, 'utf8').trim();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      throw invalid(`${name}_FILE could not be read (${code})`, `${name}_FILE`);
    }
  };
  const accessKeyId = read('AWS_ACCESS_KEY_ID');
  const secretAccessKey = read('AWS_SECRET_ACCESS_KEY');
  const sessionToken = read('AWS_SESSION_TOKEN');
  if (accessKeyId === undefined && secretAccessKey === undefined) return null;
  if (accessKeyId === undefined || secretAccessKey === undefined) {
    throw invalid('Set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or their _FILE forms), or neither', 'credentials');
  }
  return sessionToken === undefined ? { accessKeyId, secretAccessKey } : { accessKeyId, secretAccessKey, sessionToken };
}

export interface ResolvedConfig {
  bucket: string;
  prefix: string;
  endpoint: string | undefined;
  /** the endpoint as errors show it: no userinfo, no query */
  endpointLabel: string;
  region: string;
  forcePathStyle: boolean;
  partSize: number;
  partsInFlight: number;
  credentials: Credentials | null;
}

export async function resolveConfig(options: S3ContentStoreOptions): Promise<ResolvedConfig> {
  const { bucket } = options;
  if (typeof bucket !== 'string' || !/^[a-zA-Z0-9._-]{1,255}$/.test(bucket)) throw invalid('bucket must be an S3 bucket name', 'bucket');
  const partSize = options.partSize ?? DEFAULT_PART_SIZE;
  if (!Number.isSafeInteger(partSize) || partSize < MIN_PART_SIZE || partSize > MAX_PART_SIZE) {
    throw invalid(`partSize must be an integer from ${MIN_PART_SIZE} (5 MiB, S3's minimum) to ${MAX_PART_SIZE}`, 'partSize');
  }
  const partsInFlight = options.partsInFlight ?? DEFAULT_PARTS_IN_FLIGHT;
  if (!Number.isSafeInteger(partsInFlight) || partsInFlight < 1 || partsInFlight > 16) throw invalid('partsInFlight must be an integer from 1 to 16', 'partsInFlight');
  let prefix = (options.prefix ?? '').replace(/^\/+/, '');
  if (prefix !== '' && !prefix.endsWith('/')) prefix += '/';
  const region = options.region ?? process.env['AWS_REGION'] ?? 'us-east-1';
  let endpointLabel = `s3.${region}.amazonaws.com`;
  if (options.endpoint !== undefined) {
    let url: URL;
    try {
      url = new URL(options.endpoint);
    } catch {
      throw invalid('endpoint must be an http(s) URL', 'endpoint');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('endpoint must be an http(s) URL', 'endpoint');
    if (url.username !== '' || url.password !== '') throw invalid('endpoint must not carry credentials', 'endpoint');
    endpointLabel = `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
  }
  let credentials: Credentials | null = null;
  if (options.accessKeyId !== undefined || options.secretAccessKey !== undefined) {
    if (!options.accessKeyId || !options.secretAccessKey) throw invalid('Give both accessKeyId and secretAccessKey, or neither', 'credentials');
    credentials = { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey };
    if (options.sessionToken !== undefined) credentials.sessionToken = options.sessionToken;
  } else {
    credentials = credentialsFromEnv();
  }
  return {
    bucket,
    prefix,
    endpoint: options.endpoint,
    endpointLabel,
    region,
    forcePathStyle: options.forcePathStyle ?? options.endpoint !== undefined,
    partSize,
    partsInFlight,
    credentials,
  };
}

// Keys. `objects/` holds only complete, verified objects; `touched/` the dedup markers (see
// s3-content-store-upload.ts, touch); `tmp/` uploads whose hash was not known when they started.
export function objectKey(ctx: { prefix: string }, hash: ContentHash): string {
  const hex = hash.slice('blake3:'.length);
  return `${ctx.prefix}objects/${hex.slice(0, 2)}/${hex}`;
}

export function markerKey(ctx: { prefix: string }, hash: ContentHash): string {
  const hex = hash.slice('blake3:'.length);
  return `${ctx.prefix}touched/${hex.slice(0, 2)}/${hex}`;
}

export function tempKey(ctx: { prefix: string }): string {
  return `${ctx.prefix}tmp/${randomUUID()}`;
}

const KEY_HEX = /\/([0-9a-f]{2})\/([0-9a-f]{64})$/;

/** The hash a key under objects/ or touched/ names, or null for anything else found there. */
export function hashOfKey(key: string): ContentHash | null {
  const match = KEY_HEX.exec(key);
  return match === null || !match[2]!.startsWith(match[1]!) ? null : `blake3:${match[2]!}`;
}

interface SdkError {
  name?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

/** A missing object (404). A missing bucket is not "missing content": that is a storage failure. */
export function isMissing(error: unknown): boolean {
  const e = error as SdkError;
  if (e?.name === 'NoSuchBucket') return false;
  return e?.name === 'NotFound' || e?.name === 'NoSuchKey' || e?.$metadata?.httpStatusCode === 404;
}

export function statusOf(error: unknown): number | undefined {
  return (error as SdkError)?.$metadata?.httpStatusCode;
}

export function s3Failure(where: S3Where, operation: string, error: unknown): StrataError {
  if (error instanceof StrataError) return error;
  const e = (error ?? {}) as SdkError;
  // Node's socket errors have a generic name and the useful part in `code` (ECONNREFUSED...).
  const code = (e.name === undefined || e.name === 'Error' || e.name === 'AggregateError' ? e.code : e.name) ?? e.name ?? 'Error';
  const status = e.$metadata?.httpStatusCode;
  let detail = typeof e.message === 'string' ? e.message.slice(0, 300) : '';
  for (const secret of where.secrets) if (secret.length > 0) detail = detail.split(secret).join('***');
  const message =
    `S3 ${operation} failed for bucket "${where.bucket}" at ${where.endpoint}: ${code}` +
    (status === undefined ? '' : ` (HTTP ${status})`) +
    (detail === '' || detail === code || detail === 'UnknownError' ? '' : `: ${detail}`);
  // No `cause`: an SDK error carries the raw response, and a logger that prints causes would print it.
  return new StrataError('STORAGE_ERROR', { message, details: { bucket: where.bucket, endpoint: where.endpoint, s3Code: code, status } });
}

/** Run one S3 call; every failure becomes STORAGE_ERROR naming the operation. */
export async function s3Call<T>(where: S3Where, operation: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw s3Failure(where, operation, error);
  }
}

/** The same, with a 404 as null (HEAD and GET of objects that may not exist). */
export async function s3CallOrMissing<T>(where: S3Where, operation: string, call: () => Promise<T>): Promise<T | null> {
  try {
    return await call();
  } catch (error) {
    if (isMissing(error)) return null;
    throw s3Failure(where, operation, error);
  }
}
