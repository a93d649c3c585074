// Per-request context: request id, W3C trace id, client IP, and (after authentication) the principal.
// Built once per request in an onRequest hook and read by every route.

import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { Principal, RequestContext } from '../engine/access/context.js';
import { StrataError } from '../engine/errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    strata: RequestContext;
  }
  interface FastifyContextConfig {
    /** no credential needed (health, OpenAPI document) */
    public?: boolean;
  }
}

// Accept a caller's request id only if it is short and harmless in logs and headers; anything else
// is replaced, so a hostile id cannot inject log lines or header bytes.
const SAFE_REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export function genRequestId(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && SAFE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The trace id of a valid W3C `traceparent` header, else null. */
export function parseTraceparent(header: string | string[] | undefined): string | null {
  if (typeof header !== 'string') return null;
  const match = TRACEPARENT.exec(header.trim());
  if (match === null) return null;
  const [, version, traceId, parentId] = match;
  // Version ff is invalid; version 00 allows no trailing fields; all-zero ids are invalid.
  if (version === 'ff' || (version === '00' && match[5] !== undefined)) return null;
  if (/^0+$/.test(traceId!) || /^0+$/.test(parentId!)) return null;
  return traceId!;
}

export function createRequestContext(request: FastifyRequest): RequestContext {
  return {
    principal: null,
    requestId: request.id,
    traceId: parseTraceparent(request.headers.traceparent),
    clientIp: request.ip,
  };
}

/** The authenticated caller; routes that are not public always have one (the auth hook ran). */
export function principalOf(request: FastifyRequest): Principal {
  const principal = request.strata.principal;
  if (principal === null) throw new StrataError('UNAUTHENTICATED');
  return principal;
}
