// Authentication hook: runs before the body is read (onRequest), so an unauthenticated upload is
// refused without consuming it. Every kind of bad credential ends in the same 401.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { apiKeyAuthentication, bearerCredential, unauthenticated } from '../engine/access/authenticate.js';
import type { AccessDeps } from '../engine/access/deps.js';
import type { PrincipalCache } from '../engine/access/principal-cache.js';
import { accessTokenAuthentication } from '../engine/access/sign-in.js';
import { looksLikeJwt } from '../engine/access/token-verifier.js';
import { sessionAuthentication } from '../engine/access/web-sessions.js';
import { isStrataError, StrataError } from '../engine/errors.js';
import { invalidQueryKeys } from './query-string.js';
import type { AuthFailureGuard } from './rate-limits.js';
import { checkSessionProof, PROOF_HEADER } from './routes/ui.js';
import { checkSessionOrigin, cookiesOf, SESSION_COOKIE } from './web-sign-in.js';

/** Query parameters holding project paths: their decoding failures are INVALID_PATH (422). */
const PATH_PARAMETERS = new Set(['path', 'prefix']);

/**
 * `sessionProof`: session cookies count only with the page's proof header beside them (the daemon on
 * loopback, where other users' servers share the cookie's host: routes/ui.ts).
 */
export function authHook(deps: AccessDeps, cache: PrincipalCache, failures: AuthFailureGuard | null, options: { sessionProof?: boolean } = {}) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (request.routeOptions.config.public === true || request.is404) return;
    // An IP that failed too often is refused before its credential is even looked at.
    if (failures !== null) await failures.check(request, reply);
    try {
      const credential = bearerCredential(request.headers.authorization);
      if (credential === null) {
        // A browser's session cookie, when there is no Authorization header.
        const session = cookiesOf(request).get(SESSION_COOKIE);
        if (session === undefined) throw unauthenticated();
        checkSessionOrigin(request);
        if (options.sessionProof === true && !checkSessionProof(deps, session, request.headers[PROOF_HEADER])) throw unauthenticated();
        request.strata.principal = await cache.get(`session ${session}`, () => sessionAuthentication(deps, session));
        return;
      }
      request.strata.principal = await cache.get(credential, () => {
        // API keys start `rk.`; anything shaped like a JWT is an OIDC access token (when issuers are set).
        const tokens = deps.tokens;
        if (tokens !== undefined && !credential.startsWith('rk.') && looksLikeJwt(credential)) return accessTokenAuthentication(deps, tokens, credential);
        return apiKeyAuthentication(deps, credential);
      });
    } catch (error) {
      if (failures !== null && isStrataError(error, 'UNAUTHENTICATED')) await failures.failed(request);
      throw error;
    }
  };
}

/** Rejects query values that were not valid percent-encoded UTF-8 (see query-string.ts). */
export async function queryEncodingHook(request: FastifyRequest): Promise<void> {
  const [key] = invalidQueryKeys(request.query);
  if (key === undefined) return;
  if (PATH_PARAMETERS.has(key)) {
    throw new StrataError('INVALID_PATH', { message: 'Invalid path: not valid percent-encoded UTF-8', details: { field: key, reason: 'not valid UTF-8' } });
  }
  throw new StrataError('INVALID_QUERY', { message: `Query parameter '${key}' is not valid percent-encoded UTF-8`, details: { field: key, reason: 'not valid UTF-8' } });
}

