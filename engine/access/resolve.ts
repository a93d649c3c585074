// `POST /auth/resolve {email, clientKind}`: which identity provider a person signs in with. An email
// whose verified domain belongs to an organization with an active SSO connection goes to that
// organization's issuer; everyone else to the hosted identity of this server.

import type { TrustedIssuer } from './token-verifier.js';

/** The hosted identity of a server: its own issuer and the public client its CLIs sign in with. */
export interface HostedSignIn {
  issuer: string;
  audience: string;
  /** public client (no secret) registered at the issuer for `strata login`: PKCE, loopback redirects */
  clientId: string;
  scopes: string[];
  tokenType: TrustedIssuer['tokenType'];
}

export type ClientKind = 'web' | 'cli' | 'desktop';

export interface SignInRoute {
  mode: 'hosted' | 'sso';
  issuer: string;
  clientId: string;
  audience: string;
  scopes: string[];
  /** the organization whose SSO connection applies; null for the hosted identity */
  orgId: string | null;
}

/** The trusted-issuer entry of the hosted identity, for the token verifier. */
export function hostedIssuer(hosted: HostedSignIn): TrustedIssuer {
  return { issuer: hosted.issuer, audience: hosted.audience, tokenType: hosted.tokenType, orgId: null };
}
