// Sign-in from a browser (`POST /auth/resolve` with `clientKind: web`): a 303 to the person's identity
// provider (authorization code + PKCE), back to `GET /auth/web/callback`, which exchanges the code,
// verifies the access token like any other, and opens a session whose id lives only in an HttpOnly,
// SameSite=Strict cookie. What the callback needs to finish (state, PKCE verifier, issuer) travels in a
// short-lived HttpOnly cookie signed with the server's pepper, so no server state is kept for a sign-in
// that is never finished.

import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import * as oidc from 'openid-client';
import type { AccessDeps } from '../engine/access/deps.js';
import type { SignInRoute } from '../engine/access/resolve.js';
import { accessTokenAuthentication } from '../engine/access/sign-in.js';
import { createWebSession, revokeWebSession, WEB_SESSION_MS } from '../engine/access/web-sessions.js';
import { StrataError } from '../engine/errors.js';

export const SESSION_COOKIE = 'strata_session';
const FLOW_COOKIE = 'strata_sign_in';
const FLOW_MS = 10 * 60_000;
const CALLBACK_PATH = '/auth/web/callback';
/** Where a finished sign-in lands: the history browser (routes/ui.ts). */
const LANDING = '/ui/';

interface Flow {
  state: string;
  verifier: string;
  issuer: string;
  clientId: string;
  audience: string;
  expiresAt: number;
}

export function cookiesOf(request: FastifyRequest): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) cookies.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  return cookies;
}

function ownOrigin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

function cookie(request: FastifyRequest, name: string, value: string, options: { path: string; maxAgeSeconds: number; sameSite: 'Strict' | 'Lax' }): string {
  const secure = request.protocol === 'https' ? '; Secure' : '';
  return `${name}=${value}; Path=${options.path}; Max-Age=${options.maxAgeSeconds}; HttpOnly; SameSite=${options.sameSite}${secure}`;
}

function sign(deps: AccessDeps, payload: string): string {
  return createHmac('sha256', deps.pepper).update(`strata-sign-in:${payload}`).digest('base64url');
}

function readFlow(deps: AccessDeps, value: string | undefined, now: number): Flow | null {
  if (value === undefined || value.length > 4096) return null;
  const [payload, signature] = value.split('.');
  if (payload === undefined || signature === undefined) return null;
  const expected = Buffer.from(sign(deps, payload));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null;
  try {
    const flow = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Flow;
    return flow.expiresAt > now ? flow : null;
  } catch {
    return null;
  }
}

const configurations = new Map<string, Promise<oidc.Configuration>>();

function configurationOf(issuer: string, clientId: string): Promise<oidc.Configuration> {
  const key = `${issuer} ${clientId}`;
  let pending = configurations.get(key);
  if (pending === undefined) {
    const url = new URL(issuer);
    const loopback = url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
    pending = oidc.discovery(url, clientId, undefined, oidc.None(), loopback ? { execute: [oidc.allowInsecureRequests] } : undefined);
    // A failed discovery is not kept: the next sign-in tries again.
    pending.catch(() => configurations.delete(key));
    configurations.set(key, pending);
  }
  return pending;
}

function failed(reason: string): StrataError {
  return new StrataError('SIGN_IN_FAILED', { details: { reason } });
}

/** Answers `POST /auth/resolve` for a browser: 303 to the provider, with the flow in a signed cookie. */
export async function startWebSignIn(deps: AccessDeps, request: FastifyRequest, reply: FastifyReply, route: SignInRoute, email: string): Promise<FastifyReply> {
  let config: oidc.Configuration;
  try {
    config = await configurationOf(route.issuer, route.clientId);
  } catch {
    throw new StrataError('SIGN_IN_FAILED', { message: `The identity provider ${route.issuer} cannot be reached`, details: { issuer: route.issuer } });
  }
  const flow: Flow = {
    state: oidc.randomState(),
    verifier: oidc.randomPKCECodeVerifier(),
    issuer: route.issuer,
    clientId: route.clientId,
    audience: route.audience,
    expiresAt: deps.clock.now() + FLOW_MS,
  };
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: `${ownOrigin(request)}${CALLBACK_PATH}`,
    scope: route.scopes.filter((scope) => scope !== 'offline_access').join(' ') || 'openid',
    code_challenge: await oidc.calculatePKCECodeChallenge(flow.verifier),
    code_challenge_method: 'S256',
    state: flow.state,
    resource: route.audience,
    login_hint: email,
  });
  const payload = Buffer.from(JSON.stringify(flow)).toString('base64url');
  // Lax: the provider's redirect back is a top-level navigation from another site.
  reply.header('set-cookie', cookie(request, FLOW_COOKIE, `${payload}.${sign(deps, payload)}`, { path: CALLBACK_PATH, maxAgeSeconds: FLOW_MS / 1000, sameSite: 'Lax' }));
  return reply.code(303).header('location', url.href).send();
}

/** `GET /auth/web/callback`: exchange the code, verify the token, open the session. */
export async function finishWebSignIn(deps: AccessDeps, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const flow = readFlow(deps, cookiesOf(request).get(FLOW_COOKIE), deps.clock.now());
  if (flow === null) throw failed('no sign-in in progress in this browser, or it took over 10 minutes: start again');
  const tokens = deps.tokens;
  if (tokens === undefined) throw failed('this server trusts no identity provider');
  let accessToken: string;
  try {
    const config = await configurationOf(flow.issuer, flow.clientId);
    const current = new URL(`${ownOrigin(request)}${request.url}`);
    const granted = await oidc.authorizationCodeGrant(config, current, { pkceCodeVerifier: flow.verifier, expectedState: flow.state }, { resource: flow.audience });
    accessToken = granted.access_token;
  } catch {
    throw failed('the identity provider did not confirm the sign-in (state, code or PKCE check failed)');
  }
  // The token is checked like any bearer token: trusted issuer, audience, signature, lifetime.
  const { principal } = await accessTokenAuthentication(deps, tokens, accessToken);
  const session = await createWebSession(deps, principal);
  reply.header('set-cookie', [
    cookie(request, SESSION_COOKIE, session.cookie, { path: '/', maxAgeSeconds: WEB_SESSION_MS / 1000, sameSite: 'Strict' }),
    cookie(request, FLOW_COOKIE, '', { path: CALLBACK_PATH, maxAgeSeconds: 0, sameSite: 'Lax' }),
  ]);
  return reply.code(303).header('location', LANDING).send();
}

export async function webSignOut(deps: AccessDeps, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const value = cookiesOf(request).get(SESSION_COOKIE);
  if (value !== undefined) await revokeWebSession(deps, value);
  reply.header('set-cookie', cookie(request, SESSION_COOKIE, '', { path: '/', maxAgeSeconds: 0, sameSite: 'Strict' }));
  return reply.code(204).send();
}

/**
 * A cookie-authenticated request that changes something must come from this server's own pages:
 * its Origin is this origin (SameSite=Strict already keeps the cookie off cross-site requests).
 */
export function checkSessionOrigin(request: FastifyRequest): void {
  if (request.method === 'GET' || request.method === 'HEAD' || request.method === 'OPTIONS') return;
  if (request.headers.origin !== ownOrigin(request)) throw new StrataError('FORBIDDEN_ORIGIN');
}

