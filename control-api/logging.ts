// Logger configuration: every request log line carries requestId and (when sent) traceId, and
// secrets are redacted before anything is written.

import type { IncomingMessage } from 'node:http';
import type { FastifyBaseLogger, FastifyLoggerOptions } from 'fastify';
import type { Bindings, ChildLoggerOptions, LoggerOptions as PinoLoggerOptions } from 'pino';
import { parseTraceparent } from './request-context.js';

export type AppLoggerOptions = FastifyLoggerOptions & PinoLoggerOptions;

/** Header and field paths that may carry credentials. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  'apiKey',
  '*.apiKey',
  'body.apiKey',
  'pepper',
  '*.pepper',
];

/**
 * Query parameters that carry a credential: a client that puts its key in the URL by mistake
 * (`?access_token=rk.…`, refused) and the history browser's one-time links (`/ui/open?token=…`).
 * The request line is logged whole otherwise.
 */
const SECRET_QUERY_PARAMS = /([?&](?:access_token|api_key|apikey|key|token|code|secret|password)=)[^&#]*/gi;

export function redactUrl(url: string): string {
  return url.includes('?') ? url.replace(SECRET_QUERY_PARAMS, '$1[redacted]') : url;
}

interface LoggedRequest {
  method?: string;
  url?: unknown;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/** Fastify's own request fields, with the URL's credentials redacted; anything else logged as `req` as it is. */
function serializeRequest(req: LoggedRequest): Record<string, unknown> {
  if (req === null || typeof req !== 'object' || typeof req.url !== 'string') return req as Record<string, unknown>;
  return { method: req.method, url: redactUrl(req.url), host: req.host, remoteAddress: req.ip, remotePort: req.socket?.remotePort };
}

export function loggerOptions(options: AppLoggerOptions | false | undefined): AppLoggerOptions | false {
  if (options === false || options === undefined) return false;
  const redact = options.redact;
  const extra = Array.isArray(redact) ? redact : redact === undefined ? [] : redact.paths;
  return {
    ...options,
    serializers: { req: serializeRequest, ...options.serializers },
    redact: { paths: [...REDACT_PATHS, ...extra], censor: '[redacted]' },
  };
}

/** Fastify binds `reqId`; we bind `requestId` (the name the error body uses) and the trace id. */
export function childLoggerFactory(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
  rawReq: IncomingMessage,
): FastifyBaseLogger {
  const traceId = parseTraceparent(rawReq.headers.traceparent);
  const child: Bindings = { requestId: bindings['reqId'] };
  if (traceId !== null) child['traceId'] = traceId;
  return logger.child(child, options);
}
