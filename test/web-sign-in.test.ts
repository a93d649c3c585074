// Signing in from a browser: POST /auth/resolve with clientKind web → the provider (code + PKCE) →
// /auth/web/callback → a session in an HttpOnly, SameSite=Strict cookie. The test is the browser
// (cookies, redirects) against the API listening on loopback and oidc-provider.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, openHarness } from './control-api-harness.js';
import { browseToRedirect, CLI_CLIENT_ID, startTestProvider, type TestProvider } from './helpers/oidc-provider.js';

const AUDIENCE = 'https://strata.test/api';
let provider: TestProvider;
let h: Harness;
let base: string;

function setCookies(response: Response): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const line of response.headers.getSetCookie()) {
    const [pair] = line.split(';');
    const eq = pair!.indexOf('=');
    cookies.set(pair!.slice(0, eq), line);
  }
  return cookies;
}

const cookieValue = (line: string | undefined) => (line === undefined ? '' : line.split(';')[0]!.split('=').slice(1).join('='));

/** Resolve → provider → callback; returns the callback's response and the flow cookie used. */
async function signIn(email: string): Promise<{ callback: URL; flow: string }> {
  const resolved = await fetch(`${base}/auth/resolve`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, clientKind: 'web' }),
  });
  expect(resolved.status).toBe(303);
  const location = resolved.headers.get('location')!;
  expect(location.startsWith(provider.issuer)).toBe(true);
  const authorize = new URL(location);
  expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
  expect(authorize.searchParams.get('redirect_uri')).toBe(`${base}/auth/web/callback`);
  const flowLine = setCookies(resolved).get('strata_sign_in')!;
  expect(flowLine).toMatch(/HttpOnly/);
  expect(flowLine).toMatch(/SameSite=Lax/);
  return { callback: await browseToRedirect(location, provider.issuer), flow: cookieValue(flowLine) };
}

beforeAll(async () => {
  provider = await startTestProvider({ audience: AUDIENCE });
  h = await openHarness({
    clockStart: Date.now(),
    signIn: { issuer: provider.issuer, audience: AUDIENCE, clientId: CLI_CLIENT_ID, scopes: ['openid'], tokenType: 'at+jwt' },
  });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
}, 60_000);

afterAll(async () => {
  await h?.dispose();
  await provider?.close();
});

describe('browser sign-in', () => {
  it('resolve → provider → callback opens a session cookie; changes need this origin; logout ends it', async () => {
    provider.signInAs({ sub: 'web-ada', email: 'ada@lab.example', name: 'Ada Web' });
    const { callback, flow } = await signIn('ada@lab.example');
    const finished = await fetch(callback, { redirect: 'manual', headers: { cookie: `strata_sign_in=${flow}` } });
    expect(finished.status, await finished.clone().text()).toBe(303);
    expect(finished.headers.get('location')).toBe('/ui/');
    const sessionLine = setCookies(finished).get('strata_session')!;
    expect(sessionLine).toMatch(/HttpOnly/);
    expect(sessionLine).toMatch(/SameSite=Strict/);
    expect(sessionLine).toMatch(/Path=\//);
    const session = `strata_session=${cookieValue(sessionLine)}`;
    // The flow cookie is cleared, and the code cannot be used twice.
    expect(setCookies(finished).get('strata_sign_in')).toMatch(/Max-Age=0/);
    expect((await fetch(callback, { redirect: 'manual', headers: { cookie: `strata_sign_in=${flow}` } })).status).toBe(400);

    const me = await fetch(`${base}/auth/me`, { headers: { cookie: session } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ identity: { kind: 'user', name: 'Ada Web' }, authKind: 'session' });

    const patch = (origin?: string) =>
      fetch(`${base}/auth/me/preferences`, {
        method: 'PATCH',
        headers: { cookie: session, 'content-type': 'application/json', ...(origin === undefined ? {} : { origin }) },
        body: JSON.stringify({ theme: 'dark' }),
      });
    expect((await patch()).status).toBe(403);
    expect((await patch('https://evil.example')).status).toBe(403);
    expect((await patch(base)).status).toBe(200);

    const out = await fetch(`${base}/auth/web/logout`, { method: 'POST', headers: { cookie: session, 'content-type': 'application/json', origin: base }, body: '{}' });
    expect(out.status).toBe(204);
    expect(setCookies(out).get('strata_session')).toMatch(/Max-Age=0/);
    expect((await fetch(`${base}/auth/me`, { headers: { cookie: session } })).status).toBe(401);
  });

  it('refuses a callback without its flow cookie, with a tampered one, or with a forged state', async () => {
    const { callback, flow } = await signIn('bob@lab.example');
    expect((await fetch(callback, { redirect: 'manual' })).status).toBe(400);
    const [payload, signature] = flow.split('.');
    const tampered = `${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), state: 'x' })).toString('base64url')}.${signature}`;
    const refused = await fetch(callback, { redirect: 'manual', headers: { cookie: `strata_sign_in=${tampered}` } });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('SIGN_IN_FAILED');
    const forged = new URL(callback);
    forged.searchParams.set('state', 'forged');
    expect((await fetch(forged, { redirect: 'manual', headers: { cookie: `strata_sign_in=${flow}` } })).status).toBe(400);
    // A made-up session cookie is just a bad credential.
    expect((await fetch(`${base}/auth/me`, { headers: { cookie: `strata_session=${'A'.repeat(43)}` } })).status).toBe(401);
  });
});
