// `strata login`'s OIDC side (openid-client): authorization code + PKCE (S256) with the redirect to
// a loopback listener on a free port (RFC 8252 §7.3), the `state` checked; and the refresh of a
// stored token before it expires. Loaded only by the commands that need it.

import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as oidc from 'openid-client';
import type { SignInRoute } from '../engine/access/resolve.js';
import type { StoredLogin } from './credentials.js';
import { CliError, EXIT } from './errors.js';

/** What `POST /auth/resolve` answered: where this person signs in. */
export type { SignInRoute } from '../engine/access/resolve.js';

const DEFAULT_LOGIN_TIMEOUT_MS = 5 * 60_000;

function isLoopbackHttp(url: URL): boolean {
  return url.protocol === 'http:' && (url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]');
}

async function discover(issuer: string, clientId: string): Promise<oidc.Configuration> {
  const url = new URL(issuer);
  try {
    // Plain http only for an issuer on this machine (a test provider, a sidecar).
    return await oidc.discovery(url, clientId, undefined, oidc.None(), isLoopbackHttp(url) ? { execute: [oidc.allowInsecureRequests] } : undefined);
  } catch (error) {
    throw new CliError('SIGN_IN_FAILED', `cannot reach the identity provider ${issuer}: ${(error as Error).message}`, { exitCode: EXIT.unreachable, cause: error });
  }
}

function toStored(route: SignInRoute, tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers, previous?: StoredLogin): StoredLogin {
  const expiresIn = tokens.expiresIn();
  return {
    issuer: route.issuer,
    clientId: route.clientId,
    audience: route.audience,
    scopes: route.scopes,
    accessToken: tokens.access_token,
    // A refresh may rotate the refresh token, or not send one (keep the old one then).
    refreshToken: tokens.refresh_token ?? previous?.refreshToken ?? null,
    expiresAt: Date.now() + (expiresIn ?? 300) * 1000,
    name: previous?.name ?? null,
  };
}

/** Opens the URL in the user's browser when there is one; never fails the login if it cannot. */
function openBrowser(url: string): void {
  if (process.env['DISPLAY'] === undefined && process.env['WAYLAND_DISPLAY'] === undefined && process.platform === 'linux') return;
  const command = process.platform === 'darwin' ? 'open' : 'xdg-open';
  try {
    const child = spawn(command, [url], { detached: true, stdio: 'ignore' });
    child.on('error', () => {});
    child.unref();
  } catch {
    // headless: the printed URL is the way
  }
}

const DONE_PAGE = '<!doctype html><meta charset="utf-8"><title>Strata</title><p>Signed in to Strata. You can close this tab.</p>';
const FAILED_PAGE = '<!doctype html><meta charset="utf-8"><title>Strata</title><p>Sign-in failed; see the terminal.</p>';

/**
 * Authorization code + PKCE. `announce` receives the URL to visit (printed for a headless user; the
 * browser is opened too unless `openBrowser` is false). Resolves when the redirect came back and the
 * code was exchanged.
 */
export async function loginWithBrowser(
  route: SignInRoute,
  options: { announce(url: string): void; openBrowser: boolean; timeoutMs?: number; loginHint?: string },
): Promise<StoredLogin> {
  const config = await discover(route.issuer, route.clientId);
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  try {
    const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
    const parameters: Record<string, string> = {
      redirect_uri: redirectUri,
      scope: route.scopes.join(' '),
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      resource: route.audience,
    };
    if (options.loginHint !== undefined) parameters['login_hint'] = options.loginHint;
    // A refresh token needs consent for offline access at most providers.
    if (route.scopes.includes('offline_access')) parameters['prompt'] = 'consent';
    const authorizationUrl = oidc.buildAuthorizationUrl(config, parameters).href;
    options.announce(authorizationUrl);
    if (options.openBrowser) openBrowser(authorizationUrl);

    const callback = await new Promise<URL>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new CliError('SIGN_IN_TIMEOUT', 'no answer from the browser within 5 minutes: run `strata login` again', { exitCode: EXIT.auth })),
        options.timeoutMs ?? DEFAULT_LOGIN_TIMEOUT_MS,
      );
      server.on('request', (request: IncomingMessage, response: ServerResponse) => {
        const url = new URL(request.url ?? '/', redirectUri);
        if (url.pathname !== '/callback') {
          response.writeHead(404).end();
          return;
        }
        clearTimeout(timer);
        const failed = url.searchParams.has('error') || url.searchParams.get('state') !== state;
        response.writeHead(failed ? 400 : 200, { 'content-type': 'text/html; charset=utf-8', connection: 'close' }).end(failed ? FAILED_PAGE : DONE_PAGE);
        resolve(url);
      });
    });
    try {
      const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }, { resource: route.audience });
      return toStored(route, tokens);
    } catch (error) {
      // openid-client names what was wrong (a state mismatch, the provider's error); none of it is secret.
      throw new CliError('SIGN_IN_FAILED', `sign-in failed: ${(error as Error).message}`, { exitCode: EXIT.auth, cause: error });
    }
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

/**
 * The device authorization grant (RFC 8628), for a machine with no browser (an HPC login node): the
 * person opens the printed URL on any other device and confirms the code; this polls until they did.
 */
export async function loginWithDeviceCode(route: SignInRoute, options: { announce(url: string, userCode: string): void }): Promise<StoredLogin> {
  const config = await discover(route.issuer, route.clientId);
  if (config.serverMetadata().device_authorization_endpoint === undefined) {
    throw new CliError('SIGN_IN_FAILED', `the identity provider ${route.issuer} offers no device sign-in: run \`strata login --no-browser\` and open the URL on a machine with a browser`, {
      exitCode: EXIT.auth,
    });
  }
  try {
    const started = await oidc.initiateDeviceAuthorization(config, { scope: route.scopes.join(' '), resource: route.audience });
    options.announce(started.verification_uri_complete ?? started.verification_uri, started.user_code);
    const tokens = await oidc.pollDeviceAuthorizationGrant(config, started, { resource: route.audience });
    return toStored(route, tokens);
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError('SIGN_IN_FAILED', `sign-in failed: ${(error as Error).message}`, { exitCode: EXIT.auth, cause: error });
  }
}

/** A stored login's token, refreshed first when it expires within a minute. Null: not refreshable. */
export async function refreshLogin(login: StoredLogin): Promise<StoredLogin | null> {
  if (login.refreshToken === null) return null;
  const config = await discover(login.issuer, login.clientId);
  try {
    const tokens = await oidc.refreshTokenGrant(config, login.refreshToken, { resource: login.audience });
    return toStored({ mode: 'hosted', issuer: login.issuer, clientId: login.clientId, audience: login.audience, scopes: login.scopes, orgId: null }, tokens, login);
  } catch {
    return null;
  }
}

/** Best effort: tells the issuer to forget the refresh token (RFC 7009), when it offers revocation. */
export async function revokeLogin(login: StoredLogin): Promise<boolean> {
  if (login.refreshToken === null) return false;
  try {
    const config = await discover(login.issuer, login.clientId);
    if (config.serverMetadata().revocation_endpoint === undefined) return false;
    await oidc.tokenRevocation(config, login.refreshToken, { token_type_hint: 'refresh_token' });
    return true;
  } catch {
    return false;
  }
}
