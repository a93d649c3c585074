// Who is calling, established once per request by a host (the control API today, the multi-user server
// later) and passed to every authorization decision. Nothing here knows about HTTP.

import type { Actor, Identity, OrgRole } from '../types.js';

/** `api-key`: an `rk.…` key; `oidc`: an access token of a trusted OIDC issuer; `session`: a browser's sign-in */
export type AuthKind = 'api-key' | 'oidc' | 'session';

export interface Principal {
  identity: Identity;
  authKind: AuthKind;
  /** the API key used, when authKind is 'api-key' */
  keyId: string | null;
  /**
   * the organization the credential is bound to: an API key belongs to exactly one; a token of an
   * organization's SSO issuer speaks for that organization; a token of the hosted issuer for none (null)
   */
  orgId: string | null;
  /** a project-scoped credential sees this project only; null = the whole organization */
  projectScope: string | null;
  /** a person's own API key: their organization role, lowered to this; null = no cap */
  roleCap: OrgRole | null;
}

export interface RequestContext {
  /** null until authentication succeeded (public routes stay null) */
  principal: Principal | null;
  requestId: string;
  /** W3C trace id (32 lowercase hex) from `traceparent`, when the caller sent a valid one */
  traceId: string | null;
  /** resolved through the configured trusted proxies only */
  clientIp: string;
}

/** The actor recorded in version records and snapshots for this principal. */
export function actorOf(principal: Principal): Actor {
  return { id: principal.identity.identityId, kind: principal.identity.kind, name: principal.identity.name };
}
