// A real OpenID provider (oidc-provider) on loopback for the identity tests: JWT access tokens for
// Strata's audience through resource indicators, authorization code + PKCE with a scripted
// interaction (the next sign-in is whoever the test says), client credentials, and key rotation
// (a new provider with new keys behind the same issuer URL, the old key still published).

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider, { errors } from 'oidc-provider';

export const CLI_CLIENT_ID = 'strata-cli';
export const CI_CLIENT_ID = 'ci-runner';
export const CI_CLIENT_SECRET = 'ci-runner-secret-0123456789abcdef';

export interface Account {
  sub: string;
  email?: string;
  name?: string;
}

export interface SigningKey {
  kid: string;
  privateJwk: JWK;
  publicJwk: JWK;
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
}

export interface TestProvider {
  issuer: string;
  audience: string;
  keys: SigningKey[];
  /** the account the next authorization request signs in as */
  signInAs(account: Account): void;
  /** how many times the JWKS document was fetched */
  jwksFetches(): number;
  /** a new signing key, published first (tokens are signed with it) beside the old ones */
  rotate(): Promise<SigningKey>;
  /** client-credentials access token for the CI client */
  clientCredentialsToken(): Promise<string>;
  close(): Promise<void>;
}

export async function newSigningKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: 'ES256', use: 'sig' };
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  return { kid, privateJwk, publicJwk, privateKey };
}

export async function startTestProvider(options: { audience: string; accessTokenTtlSeconds?: number }): Promise<TestProvider> {
  const accounts = new Map<string, Account>();
  let nextAccount: Account = { sub: 'alice', email: 'alice@lab.example', name: 'Alice Example' };
  let jwksFetches = 0;
  const keys: SigningKey[] = [await newSigningKey('key-1')];

  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  function makeProvider(): Provider {
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: CLI_CLIENT_ID,
          application_type: 'native',
          token_endpoint_auth_method: 'none',
          // loopback redirects of a native client may use any port (RFC 8252): the CLI's and the server's
          redirect_uris: ['http://127.0.0.1/callback', 'http://127.0.0.1/auth/web/callback'],
          grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
          response_types: ['code'],
        },
        { client_id: CI_CLIENT_ID, client_secret: CI_CLIENT_SECRET, grant_types: ['client_credentials'], redirect_uris: [], response_types: [] },
      ],
      jwks: { keys: keys.map((key) => key.privateJwk) },
      clientDefaults: { id_token_signed_response_alg: 'ES256' },
      findAccount: async (_ctx, accountId) => {
        const account = accounts.get(accountId);
        if (account === undefined) return undefined;
        return { accountId, claims: async () => ({ sub: accountId, email: account.email, email_verified: true, name: account.name }) };
      },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
      scopes: ['openid', 'offline_access', 'email', 'profile', 'strata'],
      pkce: { required: () => true },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        deviceFlow: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => options.audience,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, resource) => {
            if (resource !== options.audience) throw new errors.InvalidTarget();
            return {
              scope: 'strata',
              audience: options.audience,
              accessTokenFormat: 'jwt',
              accessTokenTTL: options.accessTokenTtlSeconds ?? 600,
              jwt: { sign: { alg: 'ES256' } },
            };
          },
        },
      },
      // Okta and Entra put the person's email and name in access tokens too; Strata names users from them.
      extraTokenClaims: async (_ctx, token) => {
        const accountId = (token as { accountId?: string }).accountId;
        const account = accountId === undefined ? undefined : accounts.get(accountId);
        return account === undefined ? undefined : { email: account.email, email_verified: true, name: account.name };
      },
      interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
      ttl: { AccessToken: options.accessTokenTtlSeconds ?? 600, Interaction: 600, Session: 600, Grant: 600, IdToken: 600, RefreshToken: 3600 },
    });
    provider.on('server_error', (_ctx, error) => console.error('oidc-provider server_error', error));
    return provider;
  }

  let provider = makeProvider();
  let handler = provider.callback();

  // The scripted interaction: sign in as the next account and grant what was asked, in one step.
  async function interaction(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const details = await provider.interactionDetails(req, res);
    const account = nextAccount;
    accounts.set(account.sub, account);
    const params = details.params as { client_id: string; scope?: string; resource?: string | string[] };
    const grant = new provider.Grant({ accountId: account.sub, clientId: params.client_id });
    grant.addOIDCScope(params.scope ?? 'openid');
    grant.addResourceScope(options.audience, 'strata');
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { login: { accountId: account.sub }, consent: { grantId } }, { mergeWithLastSubmission: false });
  }

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.url?.startsWith('/interaction/')) {
      interaction(req, res).catch((error: unknown) => {
        res.statusCode = 500;
        res.end(String(error));
      });
      return;
    }
    if (req.url?.startsWith('/jwks')) jwksFetches += 1;
    handler(req, res);
  });

  return {
    issuer,
    audience: options.audience,
    keys,
    signInAs(account) {
      nextAccount = account;
    },
    jwksFetches: () => jwksFetches,
    async rotate() {
      const key = await newSigningKey(`key-${keys.length + 1}`);
      keys.unshift(key);
      provider = makeProvider();
      handler = provider.callback();
      return key;
    },
    async clientCredentialsToken() {
      const response = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${CI_CLIENT_ID}:${CI_CLIENT_SECRET}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'strata', resource: options.audience }).toString(),
      });
      const body = (await response.json()) as { access_token?: string; error?: string };
      if (body.access_token === undefined) throw new Error(`client credentials failed: ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Plays the person on another device for the device flow: opens the verification URL (the code in it),
 * submits each form the provider shows (the code's auto-submit, the confirmation), signs in through the
 * scripted interaction, until a page with no form (the success page).
 */
export async function confirmDeviceCode(verificationUrl: string): Promise<void> {
  const cookies = new Map<string, string>();
  let request: { url: string; init: RequestInit } = { url: verificationUrl, init: {} };
  for (let hop = 0; hop < 15; hop += 1) {
    const response = await fetch(request.url, { ...request.init, redirect: 'manual', headers: { ...(request.init.headers as Record<string, string>), cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    const location = response.headers.get('location');
    if (location !== null) {
      request = { url: new URL(location, request.url).href, init: {} };
      continue;
    }
    const html = await response.text();
    const form = /<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/i.exec(html);
    if (form === null) {
      if (response.status !== 200) throw new Error(`device confirmation stopped: ${response.status} ${html.slice(0, 500)}`);
      return;
    }
    const fields = new URLSearchParams();
    for (const input of form[2]!.matchAll(/<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"/gi)) fields.set(input[1]!, input[2]!);
    request = {
      url: new URL(form[1]!, request.url).href,
      init: { method: 'POST', body: fields.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } },
    };
  }
  throw new Error('too many steps');
}

/**
 * Plays the browser: follows an authorization URL's redirects with cookies until one leaves the
 * provider (the client's redirect URI), and returns that URL without requesting it.
 */
export async function browseToRedirect(authorizationUrl: string, issuer: string): Promise<URL> {
  const cookies = new Map<string, string>();
  let url = authorizationUrl;
  for (let hop = 0; hop < 10; hop += 1) {
    const response = await fetch(url, { redirect: 'manual', headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    const location = response.headers.get('location');
    if (location === null) throw new Error(`authorization stopped at ${url}: ${response.status} ${await response.text()}`);
    const next = new URL(location, url);
    if (!next.href.startsWith(issuer)) return next;
    url = next.href;
  }
  throw new Error('too many redirects');
}
