// The hosted identity of `strata serve`, from flags or the environment (flags win):
//   STRATA_OIDC_ISSUER     the issuer, exactly as its discovery document spells it
//   STRATA_OIDC_AUDIENCE   the `aud` its access tokens carry for this server (the resource indicator)
//   STRATA_OIDC_CLIENT_ID  the public client `strata login` uses (PKCE, loopback redirect)
//   STRATA_OIDC_SCOPES     space-separated, default "openid offline_access"
//   STRATA_OIDC_TOKEN_TYPE at+jwt (default: access tokens must be typed, RFC 9068) or any
// No issuer: API keys only, and `/auth/resolve` says sign-in is not configured.

import type { HostedSignIn } from '../engine/access/resolve.js';
import { StrataError } from '../engine/errors.js';

export interface SignInFlags {
  oidcIssuer?: string;
  oidcAudience?: string;
  oidcClientId?: string;
  oidcScopes?: string;
  oidcTokenType?: string;
}

export const DEFAULT_SCOPES = ['openid', 'offline_access'];

function invalid(field: string, message: string): StrataError {
  return new StrataError('INVALID_ARGUMENT', { message, details: { field } });
}

export function signInFromConfig(flags: SignInFlags, env: NodeJS.ProcessEnv = process.env): HostedSignIn | undefined {
  const issuer = flags.oidcIssuer ?? env['STRATA_OIDC_ISSUER'];
  if (issuer === undefined || issuer === '') return undefined;
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw invalid('oidcIssuer', `the OIDC issuer must be a URL, got '${issuer}'`);
  }
  // Tokens are bearer credentials: an issuer reached over plain HTTP could be impersonated, except on
  // the machine itself (tests, a provider beside the server).
  const loopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw invalid('oidcIssuer', `the OIDC issuer must use https (http only on loopback), got '${issuer}'`);
  }
  const audience = flags.oidcAudience ?? env['STRATA_OIDC_AUDIENCE'];
  if (audience === undefined || audience === '') throw invalid('oidcAudience', 'an OIDC issuer needs an audience (--oidc-audience or STRATA_OIDC_AUDIENCE)');
  const clientId = flags.oidcClientId ?? env['STRATA_OIDC_CLIENT_ID'];
  if (clientId === undefined || clientId === '') throw invalid('oidcClientId', 'an OIDC issuer needs the client id of strata login (--oidc-client-id or STRATA_OIDC_CLIENT_ID)');
  const scopesText = flags.oidcScopes ?? env['STRATA_OIDC_SCOPES'];
  const scopes = scopesText === undefined || scopesText.trim() === '' ? DEFAULT_SCOPES : scopesText.trim().split(/\s+/);
  const tokenType = flags.oidcTokenType ?? env['STRATA_OIDC_TOKEN_TYPE'] ?? 'at+jwt';
  if (tokenType !== 'at+jwt' && tokenType !== 'any') throw invalid('oidcTokenType', `the token type must be 'at+jwt' or 'any', got '${tokenType}'`);
  return { issuer, audience, clientId, scopes, tokenType };
}
