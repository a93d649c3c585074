// OIDC access tokens (JWT, RFC 9068) → verified claims. Only issuers the deployment trusts are
// consulted: the hosted issuer of the server's configuration and, per organization, its active SSO
// connection. Every failure — untrusted issuer, bad signature, wrong audience, expired, an ID token
// presented as a bearer token, a discovery or JWKS fetch that failed — is the same UNAUTHENTICATED
// error: which check failed is logged at debug level by the caller at most, never answered.

import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, type JWTPayload, jwtVerify } from 'jose';
import type { Clock } from '../ports/world.js';
import { unauthenticated } from './authenticate.js';

/** Asymmetric only: `none` and HS* (a shared secret, or the public key abused as one) never verify. */
export const ACCEPTED_ALGORITHMS = ['RS256', 'ES256', 'EdDSA'] as const;
/** Clocks of the issuer and the server may disagree by this much (the issue allows at most 60 s). */
export const CLOCK_TOLERANCE_SECONDS = 60;
/** After a JWKS fetch, a token with an unknown `kid` waits this long before the next fetch. */
export const JWKS_COOLDOWN_MS = 30_000;
/** Keys are refetched at least this often even when every `kid` is known (rotation without new kids). */
const JWKS_MAX_AGE_MS = 10 * 60_000;
/** A failed discovery is not retried for this long: a token storm must not become a fetch storm. */
const DISCOVERY_RETRY_MS = 5_000;
const FETCH_TIMEOUT_MS = 5_000;
/** Claims only ID tokens carry: a token with one of them is not an access token. */
const ID_TOKEN_CLAIMS = ['nonce', 'at_hash', 'c_hash'] as const;

export interface TrustedIssuer {
  /** compared with the token's `iss` exactly, as the issuer's discovery document spells it */
  issuer: string;
  /** the `aud` a token for this server must carry */
  audience: string;
  /**
   * `at+jwt`: the issuer types its access tokens (RFC 9068; oidc-provider, Auth0, Keycloak can), and
   * a token without that `typ` is refused. `any`: issuers that do not (Okta, Entra ID v1).
   */
  tokenType: 'at+jwt' | 'any';
  /** null: the hosted identity of this server; else the organization whose SSO connection it is */
  orgId: string | null;
}

export interface VerifiedToken {
  issuer: TrustedIssuer;
  subject: string;
  /** the OAuth client the token was issued to (`client_id` or `azp`), when the token says */
  clientId: string | null;
  /** a client-credentials token: no person behind it (RFC 9068 §2.2: `sub` is the client) */
  service: boolean;
  claims: JWTPayload;
}

export interface TokenVerifier {
  verify(token: string): Promise<VerifiedToken>;
}

/** Whether a bearer credential is shaped like a JWS (three base64url parts), not an API key. */
export function looksLikeJwt(credential: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(credential);
}

type KeyGetter = ReturnType<typeof createRemoteJWKSet>;

interface IssuerKeys {
  keys: KeyGetter | null;
  failedAt: number;
  pending: Promise<KeyGetter> | null;
}

export interface TokenVerifierOptions {
  /** the trusted issuer whose identifier is exactly `iss`, or null */
  trustedIssuer(iss: string): Promise<TrustedIssuer | null>;
  clock: Clock;
  /** for tests: a shorter cooldown between JWKS refetches */
  jwksCooldownMs?: number;
}

export function createTokenVerifier(options: TokenVerifierOptions): TokenVerifier {
  // One remote JWKS per issuer, found through the issuer's discovery document once.
  const byIssuer = new Map<string, IssuerKeys>();
  const cooldownDuration = options.jwksCooldownMs ?? JWKS_COOLDOWN_MS;

  async function discoverKeys(issuer: string): Promise<KeyGetter> {
    const url = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    const response = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: 'error' });
    if (!response.ok) throw new Error(`discovery answered ${response.status}`);
    const document = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown };
    // A discovery document for another issuer (a proxy, a typo) must not lend its keys to this one.
    if (document.issuer !== issuer || typeof document.jwks_uri !== 'string') throw new Error('discovery document does not match the issuer');
    return createRemoteJWKSet(new URL(document.jwks_uri), { cooldownDuration, cacheMaxAge: JWKS_MAX_AGE_MS, timeoutDuration: FETCH_TIMEOUT_MS });
  }

  async function keysFor(issuer: string): Promise<KeyGetter> {
    let state = byIssuer.get(issuer);
    if (state === undefined) {
      state = { keys: null, failedAt: Number.NEGATIVE_INFINITY, pending: null };
      byIssuer.set(issuer, state);
    }
    if (state.keys !== null) return state.keys;
    if (state.pending !== null) return state.pending;
    if (options.clock.now() - state.failedAt < DISCOVERY_RETRY_MS) throw unauthenticated();
    const entry = state;
    entry.pending = discoverKeys(issuer).then(
      (keys) => {
        entry.keys = keys;
        entry.pending = null;
        return keys;
      },
      (error: unknown) => {
        entry.failedAt = options.clock.now();
        entry.pending = null;
        throw error;
      },
    );
    return entry.pending;
  }

  return {
    async verify(token) {
      try {
        if (!looksLikeJwt(token)) throw unauthenticated();
        // Unverified peeks, only to choose the issuer whose keys then verify everything.
        const header = decodeProtectedHeader(token);
        const unverified = decodeJwt(token);
        if (typeof header.alg !== 'string' || !(ACCEPTED_ALGORITHMS as readonly string[]).includes(header.alg)) throw unauthenticated();
        if (typeof unverified.iss !== 'string') throw unauthenticated();
        const trusted = await options.trustedIssuer(unverified.iss);
        if (trusted === null || trusted.issuer !== unverified.iss) throw unauthenticated();
        const keys = await keysFor(trusted.issuer);
        const { payload } = await jwtVerify(token, keys, {
          issuer: trusted.issuer,
          audience: trusted.audience,
          algorithms: [...ACCEPTED_ALGORITHMS],
          clockTolerance: CLOCK_TOLERANCE_SECONDS,
          // jose checks `exp` only when present: an access token without one would never expire.
          requiredClaims: ['exp', 'iat', 'sub'],
          currentDate: new Date(options.clock.now()),
          ...(trusted.tokenType === 'at+jwt' ? { typ: 'at+jwt' } : {}),
        });
        if (ID_TOKEN_CLAIMS.some((claim) => claim in payload)) throw unauthenticated();
        const subject = payload.sub;
        if (typeof subject !== 'string' || subject === '' || subject.length > 255) throw unauthenticated();
        const clientId = typeof payload.client_id === 'string' ? payload.client_id : typeof payload.azp === 'string' ? payload.azp : null;
        return { issuer: trusted, subject, clientId, service: clientId !== null && clientId === subject, claims: payload };
      } catch {
        // jose's errors name the failed check; the caller must not be able to tell them apart.
        throw unauthenticated();
      }
    },
  };
}
