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

export function loggerOptions(options: AppLoggerOptions | false | undefined): AppLoggerOptions | false {
  if (options === false || options === undefined) return false;
  const redact = options.redact;
  const extra = Array.isArray(redact) ? redact : redact === undefined ? [] : redact.paths;
  return { ...options, redact: { paths: [...REDACT_PATHS, ...extra], censor: '[redacted]' } };
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
