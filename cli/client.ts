// A thin HTTP client over node:http for the API in docs/api.md. It knows the one error body every
// route returns and turns it into a CliError whose exit code scripts can branch on. Bodies are
// streamed in both directions, as Node streams.
//
// Not fetch: loading undici (and compiling its WebAssembly HTTP parser) cost every command ~30 ms of
// CPU and wall time before its first request (`node -e` with one GET: 55-60 ms with fetch, 30 ms
// with node:http), and piping an upload through web streams cost `strata git push` of 25 MB
// ~40 ms more CPU, which the server's receive needs on a 2-core machine (bench/git-push.ts).

import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { CliError, EXIT, exitCodeForStatus } from './errors.js';

export type QueryValue = string | number | boolean | undefined;

export interface RequestOptions {
  query?: Record<string, QueryValue>;
  /** serialized as JSON */
  json?: unknown;
  /** raw bytes, streamed (a file, stdin, a child's stdout); its errors abort the request */
  body?: Readable;
  headers?: Record<string, string>;
}

export interface ApiResponse {
  status: number;
  headers: { get(name: string): string | null };
  /** the response body as it arrives */
  body: Readable;
}

export interface ApiClient {
  readonly serverUrl: string;
  /** Sends the request; resolves with the parsed JSON body (undefined for 204). Non-2xx → CliError. */
  json<T>(method: string, path: string, options?: RequestOptions): Promise<T>;
  /** Like json(), but hands back the successful response so the caller can stream its body. */
  raw(method: string, path: string, options?: RequestOptions): Promise<ApiResponse>;
}

export interface ClientOptions {
  serverUrl: string;
  apiKey: string | undefined;
  /** a signed-in person's access token (`strata login`), used when there is no API key */
  tokenSource?: () => Promise<string>;
  /** for the User-Agent */
  version: string;
}

// Errors of the connect phase that mean "nobody answered" (the UND_ERR ones: from fetch, in daemon.ts's probe).
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'ECONNRESET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
]);

export function createClient(options: ClientOptions): ApiClient {
  const base = options.serverUrl;

  function url(path: string, query: Record<string, QueryValue> | undefined): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) params.set(key, String(value));
    }
    const search = params.toString();
    return base + path + (search ? `?${search}` : '');
  }

  async function send(method: string, path: string, request: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = {
      'user-agent': `strata-cli/${options.version}`,
      accept: 'application/json',
      ...request.headers,
    };
    if (options.apiKey) headers['authorization'] = `Bearer ${options.apiKey}`;
    else if (options.tokenSource !== undefined) headers['authorization'] = `Bearer ${await options.tokenSource()}`;
    let payload: string | undefined;
    if (request.json !== undefined) {
      payload = JSON.stringify(request.json);
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    } else if (request.body !== undefined) {
      headers['content-type'] ??= 'application/octet-stream';
    }
    const target = new URL(url(path, request.query));
    const upload = request.body;
    let response: ApiResponse;
    try {
      response = await new Promise<ApiResponse>((resolve, reject) => {
        const outgoing = (target.protocol === 'https:' ? https : http).request(target, { method, headers }, (incoming) => {
          // A refusal before the upload ended: stop sending (the server closes the connection). A
          // success can also arrive first — the server counted Content-Length bytes while our file
          // stream had yet to see its end — and then the pipe must finish: unpiped, the request was
          // never ended and its socket kept the process alive until the server's keep-alive timeout
          // (a `strata put` that printed its result and exited 60 s later, under load).
          if (upload !== undefined && !upload.readableEnded && (incoming.statusCode ?? 0) >= 300) upload.unpipe(outgoing);
          resolve({ status: incoming.statusCode ?? 0, headers: { get: (name) => headerValue(incoming.headers[name.toLowerCase()]) }, body: incoming });
        });
        outgoing.on('error', reject);
        if (upload === undefined) outgoing.end(payload);
        else {
          upload.on('error', (error) => outgoing.destroy(error));
          upload.pipe(outgoing);
        }
      });
    } catch (error) {
      throw requestFailure(error, base, upload !== undefined);
    }
    if (response.status < 200 || response.status > 299) throw await errorFromResponse(response);
    return response;
  }

  return {
    serverUrl: base,
    raw: send,
    async json<T>(method: string, path: string, request?: RequestOptions): Promise<T> {
      const response = await send(method, path, request);
      const text = await readText(response.body);
      if (response.status === 204) return undefined as T;
      if (text === '') return undefined as T;
      try {
        return JSON.parse(text) as T;
      } catch (error) {
        throw new CliError('BAD_RESPONSE', `the server sent a response that is not JSON (${method} ${path})`, {
          exitCode: EXIT.unexpected,
          status: response.status,
          cause: error,
        });
      }
    },
  };
}

// The server answers a rejected upload (bad path, no permission, too large) at once and closes the
// connection instead of reading the rest; our next write then fails, and the kernel usually drops the
// answer with the connection (measured: half of 20 rejected 50 MiB uploads surfaced only EPIPE, with
// fetch and with node:http alike). Callers turn UPLOAD_INTERRUPTED into the real error by asking again
// without a body (see `put`).
const INTERRUPTED_CODES = new Set(['EPIPE', 'ECONNRESET', 'UND_ERR_SOCKET']);

/** A local error that aborted an upload keeps its own meaning; anything else is "cannot reach". */
function requestFailure(error: unknown, base: string, uploading: boolean): CliError {
  if (error instanceof CliError) return error;
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause instanceof CliError) return cause;
  const code = errnoCode(cause) ?? errnoCode(error);
  if (uploading && code !== undefined && INTERRUPTED_CODES.has(code)) {
    return new CliError('UPLOAD_INTERRUPTED', `the server closed the connection during the upload (${code})`, {
      exitCode: EXIT.unexpected,
      details: { serverUrl: base, cause: code },
      cause: error,
    });
  }
  if (code !== undefined && UNREACHABLE_CODES.has(code)) {
    return new CliError('SERVER_UNREACHABLE', `cannot reach the Strata server at ${base} (${code})`, {
      exitCode: EXIT.unreachable,
      details: { serverUrl: base, cause: code },
      cause: error,
    });
  }
  const message = cause instanceof Error ? cause.message : error instanceof Error ? error.message : String(error);
  return new CliError('SERVER_UNREACHABLE', `request to ${base} failed: ${message}`, {
    exitCode: EXIT.unreachable,
    details: { serverUrl: base },
    cause: error,
  });
}

function errnoCode(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const code = (value as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  // connecting to several addresses (localhost: ::1 and 127.0.0.1) fails as an AggregateError
  const errors = (value as { errors?: unknown }).errors;
  if (Array.isArray(errors)) return errnoCode(errors[0]);
  return undefined;
}

interface ApiErrorBody {
  error?: { code?: unknown; message?: unknown; details?: unknown; requestId?: unknown };
}

function headerValue(value: string | string[] | undefined): string | null {
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : value;
}

async function readText(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function errorFromResponse(response: ApiResponse): Promise<CliError> {
  const requestId = response.headers.get('x-request-id') ?? undefined;
  let body: ApiErrorBody | undefined;
  try {
    body = JSON.parse(await readText(response.body)) as ApiErrorBody;
  } catch {
    body = undefined;
  }
  const error = body?.error;
  const code = typeof error?.code === 'string' ? error.code : `HTTP_${response.status}`;
  const message =
    typeof error?.message === 'string' ? error.message : `the server answered ${response.status} ${http.STATUS_CODES[response.status] ?? ''}`.trimEnd();
  const details =
    error?.details !== null && typeof error?.details === 'object' ? (error.details as Record<string, unknown>) : undefined;
  return new CliError(code, message, {
    exitCode: exitCodeForStatus(response.status),
    status: response.status,
    ...(details ? { details } : {}),
    ...(typeof error?.requestId === 'string' ? { requestId: error.requestId } : requestId ? { requestId } : {}),
  });
}
