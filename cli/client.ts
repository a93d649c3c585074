// A thin HTTP client over fetch for the API in docs/api.md. It knows the one error body every route
// returns and turns it into a CliError whose exit code scripts can branch on. Bodies are streamed in
// both directions: uploads go out as a ReadableStream (duplex 'half'), downloads come back as one.

import { CliError, EXIT, exitCodeForStatus } from './errors.js';

export type QueryValue = string | number | boolean | undefined;

export interface RequestOptions {
  query?: Record<string, QueryValue>;
  /** serialized as JSON */
  json?: unknown;
  /** raw bytes, streamed */
  stream?: ReadableStream<Uint8Array>;
  headers?: Record<string, string>;
}

export interface ApiClient {
  readonly serverUrl: string;
  /** Sends the request; resolves with the parsed JSON body (undefined for 204). Non-2xx → CliError. */
  json<T>(method: string, path: string, options?: RequestOptions): Promise<T>;
  /** Like json(), but hands back the successful Response so the caller can stream its body. */
  raw(method: string, path: string, options?: RequestOptions): Promise<Response>;
}

export interface ClientOptions {
  serverUrl: string;
  apiKey: string | undefined;
  /** for the User-Agent */
  version: string;
}

// Errors from undici's connect phase (the cause of fetch's TypeError) that mean "nobody answered".
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

  async function send(method: string, path: string, request: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = {
      'user-agent': `strata-cli/${options.version}`,
      accept: 'application/json',
      ...request.headers,
    };
    if (options.apiKey) headers['authorization'] = `Bearer ${options.apiKey}`;
    const init: RequestInit = { method, headers };
    if (request.json !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(request.json);
    } else if (request.stream !== undefined) {
      headers['content-type'] ??= 'application/octet-stream';
      init.body = request.stream;
      // Required by fetch for a streamed request body: we send it all before reading the response.
      init.duplex = 'half';
      // With any other redirect mode fetch clones the request to be able to replay it, which tees the
      // body stream; the unread branch then holds every uploaded byte (measured: a 300 MiB put grew
      // the CLI to 377 MB RSS; with 'error' it stays flat). The API never redirects.
      init.redirect = 'error';
    }
    let response: Response;
    try {
      response = await fetch(url(path, request.query), init);
    } catch (error) {
      throw fetchFailure(error, base, request.stream !== undefined);
    }
    if (!response.ok) throw await errorFromResponse(response);
    return response;
  }

  return {
    serverUrl: base,
    raw: send,
    async json<T>(method: string, path: string, request?: RequestOptions): Promise<T> {
      const response = await send(method, path, request);
      if (response.status === 204) return undefined as T;
      const text = await response.text();
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
function fetchFailure(error: unknown, base: string, uploading: boolean): CliError {
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
  // undici wraps connect errors in an AggregateError when several addresses were tried
  const errors = (value as { errors?: unknown }).errors;
  if (Array.isArray(errors)) return errnoCode(errors[0]);
  return undefined;
}

interface ApiErrorBody {
  error?: { code?: unknown; message?: unknown; details?: unknown; requestId?: unknown };
}

async function errorFromResponse(response: Response): Promise<CliError> {
  const requestId = response.headers.get('x-request-id') ?? undefined;
  let body: ApiErrorBody | undefined;
  try {
    body = (await response.json()) as ApiErrorBody;
  } catch {
    body = undefined;
  }
  const error = body?.error;
  const code = typeof error?.code === 'string' ? error.code : `HTTP_${response.status}`;
  const message =
    typeof error?.message === 'string' ? error.message : `the server answered ${response.status} ${response.statusText}`;
  const details =
    error?.details !== null && typeof error?.details === 'object' ? (error.details as Record<string, unknown>) : undefined;
  return new CliError(code, message, {
    exitCode: exitCodeForStatus(response.status),
    status: response.status,
    ...(details ? { details } : {}),
    ...(typeof error?.requestId === 'string' ? { requestId: error.requestId } : requestId ? { requestId } : {}),
  });
}
