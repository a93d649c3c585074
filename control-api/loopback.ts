// The daemon's API listens on loopback, but a browser on the same machine can still reach it: a
// hostile page can send requests (CSRF) or rebind its own DNS name to 127.0.0.1. Requiring a loopback
// Host defeats DNS rebinding; refusing every Origin but the daemon's own refuses every request a page
// of another origin starts (another port is another origin); and no CORS headers are ever sent, so a
// browser never lets another page read a response. The daemon's own pages (the history browser,
// routes/ui.ts) are its origin.

import type { FastifyRequest } from 'fastify';
import { StrataError } from '../engine/errors.js';

const LOOPBACK_HOST = /^(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/i;

export function isLoopbackHost(host: string | undefined): boolean {
  return host !== undefined && LOOPBACK_HOST.test(host);
}

export async function loopbackGuard(request: FastifyRequest): Promise<void> {
  if (!isLoopbackHost(request.headers.host)) throw new StrataError('FORBIDDEN_HOST');
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== `${request.protocol}://${request.headers.host}`) throw new StrataError('FORBIDDEN_ORIGIN');
}
