// One error body for every failure, whoever raised it (a route, the engine, Fastify's parsers, the
// router, the socket): `{"error": {code, message, details?, requestId, traceId?}}`. Unexpected
// exceptions become a generic 500; their message and stack only go to the log.

import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_CATALOGUE, type ErrorCode, isStrataError, StrataError } from '../engine/errors.js';

export interface ErrorBody {
  error: {
    code: ErrorCode;
    message: string;
    details?: Record<string, unknown>;
    requestId: string;
    traceId?: string;
  };
}

// Fastify's own errors that are the caller's fault, mapped to our catalogue.
const FASTIFY_CODES: Record<string, { code: ErrorCode; message?: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'BODY_TOO_LARGE' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'The content type is not supported; send application/json' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'INVALID_BODY', message: 'The request body does not match its Content-Length' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: 'INVALID_BODY', message: 'The request body is empty' },
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'INVALID_BODY', message: 'The request body is not valid JSON' },
  FST_ERR_BAD_URL: { code: 'INVALID_UTF8', message: 'The URL is not valid percent-encoded UTF-8' },
  FST_ERR_MAX_PARAM_LENGTH: { code: 'NOT_FOUND' },
};

const STATUS_CODES: Record<number, ErrorCode> = { 400: 'MALFORMED_REQUEST', 404: 'NOT_FOUND', 413: 'BODY_TOO_LARGE', 415: 'UNSUPPORTED_MEDIA_TYPE' };

/** Turns anything thrown into a StrataError that is safe to show to the caller. */
export function toPublicError(error: unknown): { error: StrataError; expected: boolean } {
  if (isStrataError(error)) {
    // Server-side failures keep their code but not their message or details (paths, driver text);
    // a 503 is a state the service reports on purpose (shutting down, not ready) and says why. A full
    // disk is the user's (or the operator's) to fix: said as such, with the catalogue's words (the
    // error's own may name a path) and the errno, and expected (logged as a warning, not a crash).
    if (error.code === 'DISK_FULL') return { error: new StrataError('DISK_FULL', { details: { code: error.details?.['code'] ?? 'ENOSPC' } }), expected: true };
    if (error.status >= 500 && error.status !== 503) return { error: new StrataError(error.code), expected: false };
    return { error, expected: true };
  }
  const fastifyError = error as Partial<FastifyError> | null;
  const mapped = typeof fastifyError?.code === 'string' ? FASTIFY_CODES[fastifyError.code] : undefined;
  if (mapped !== undefined) {
    return { error: new StrataError(mapped.code, mapped.message === undefined ? {} : { message: mapped.message }), expected: true };
  }
  const status = fastifyError?.statusCode;
  if (error instanceof SyntaxError && status === 400) {
    return { error: new StrataError('INVALID_BODY', { message: 'The request body is not valid JSON' }), expected: true };
  }
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return { error: new StrataError(STATUS_CODES[status] ?? 'INVALID_ARGUMENT'), expected: true };
  }
  return { error: new StrataError('INTERNAL'), expected: false };
}

export function errorBody(request: FastifyRequest, error: StrataError): ErrorBody {
  const traceId = request.strata?.traceId ?? null;
  return {
    error: {
      code: error.code,
      message: error.message,
      ...(error.details === undefined ? {} : { details: error.details }),
      requestId: request.id,
      ...(traceId === null ? {} : { traceId }),
    },
  };
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: StrataError): FastifyReply {
  if (error.code === 'UNAUTHENTICATED') reply.header('www-authenticate', 'Bearer');
  // Set here too: router failures (frameworkErrors) are answered without the onSend hook.
  reply.header('x-request-id', request.id);
  // A client still uploading (a rejected PUT of a large file) should stop rather than have the server
  // read and discard the rest of its body to keep the connection alive.
  const hasBody = request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
  if (hasBody && !request.raw.complete) reply.header('connection', 'close');
  return reply.code(error.status).type('application/json; charset=utf-8').send(errorBody(request, error));
}

/**
 * The client closed its connection mid-request (a daemon killed during an upload, a laptop closed): an
 * everyday event for a server, logged at info, not as a failure with a stack an operator's alerting
 * would page on. Node reports it as the body stream's "aborted" (ECONNRESET).
 */
function clientWentAway(request: FastifyRequest, error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return request.raw.readableAborted || (code === 'ECONNRESET' && (error as Error).message === 'aborted');
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const { error: publicError, expected } = toPublicError(error);
    if (!expected && clientWentAway(request, error)) request.log.info({ err: (error as Error).message }, 'request ended: the client went away');
    else if (!expected) request.log.error({ err: error }, 'request failed');
    return sendError(request, reply, publicError);
  });
  app.setNotFoundHandler((request, reply) => {
    return sendError(request, reply, new StrataError('NOT_FOUND', { message: `No route for ${request.method} ${request.url.split('?')[0]}` }));
  });
}

/** For the router's own failures (undecodable URL, overlong parameter): same body as everything else. */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  void sendError(request, reply, toPublicError(error).error);
}

/**
 * Malformed HTTP at the socket level (bad request line, headers too large). There is no request
 * object, so the body has a fresh request id; the connection is closed afterwards.
 */
export function clientErrorHandler(requestId: () => string) {
  return (_error: Error, socket: Socket): void => {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const id = requestId();
    const body = JSON.stringify({ error: { code: 'MALFORMED_REQUEST', message: ERROR_CATALOGUE.MALFORMED_REQUEST.message, requestId: id } });
    socket.end(
      `HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-type: application/json; charset=utf-8\r\n` +
        `x-request-id: ${id}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  };
}
