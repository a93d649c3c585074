// The history browser's routes at the HTTP level (control-api/routes/ui.ts, ui-links.ts): what the
// browser test (ui-browser.test.ts) cannot reach: an expired link, a forged or borrowed proof, asset
// names that try to leave the directory, and the headers every page carries.
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UI_LINK_MS } from '../control-api/ui-links.js';
import { type Harness, openHarness } from './control-api-harness.js';

const HOST = { host: '127.0.0.1:7420' };

describe('history browser routes', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await openHarness({ loopbackOnly: true });
  });
  afterEach(async () => {
    await h.dispose();
  });

  /** A link for the owner (or `key`), spent: the session cookie and the proof the page would keep. */
  const signIn = async (key?: string): Promise<{ cookie: string; proof: string }> => {
    const { url } = await h.ok<{ url: string }>('POST', '/v1/ui/links', { body: {}, status: 201, ...(key === undefined ? {} : { key }) });
    const opened = await h.request('GET', new URL(url).pathname + new URL(url).search, { key: null, headers: HOST });
    expect(opened.statusCode).toBe(303);
    const cookie = /^strata_session=([^;]+); Path=\/; Max-Age=\d+; HttpOnly; SameSite=Strict$/.exec(String(opened.headers['set-cookie']))![1]!;
    const proof = /^\/ui\/#proof=([A-Za-z0-9_-]+)$/.exec(String(opened.headers['location']))![1]!;
    return { cookie, proof };
  };

  it('a link works once and for a minute; its answer is never cached', async () => {
    const { url } = await h.ok<{ url: string }>('POST', '/v1/ui/links', { body: {}, status: 201 });
    const path = new URL(url).pathname + new URL(url).search;
    h.clock.advance(UI_LINK_MS);
    const late = await h.request('GET', path, { key: null, headers: HOST });
    expect(late.statusCode).toBe(401);
    expect(late.headers['set-cookie']).toBeUndefined();
    expect(late.headers['cache-control']).toBe('no-store');
    for (const token of ['', 'x', 'A'.repeat(43), `${'A'.repeat(43)}/../`]) {
      const forged = await h.request('GET', `/ui/open?token=${encodeURIComponent(token)}`, { key: null, headers: HOST });
      expect(forged.statusCode, token).toBe(401);
    }
    const fresh = await h.ok<{ url: string }>('POST', '/v1/ui/links', { body: {}, status: 201 });
    const freshPath = new URL(fresh.url).pathname + new URL(fresh.url).search;
    expect((await h.request('GET', freshPath, { key: null, headers: HOST })).statusCode).toBe(303);
    expect((await h.request('GET', freshPath, { key: null, headers: HOST })).statusCode).toBe(401);
    // Without a credential no link is made; nor for a key narrower than its identity (a session would widen it).
    expect((await h.request('POST', '/v1/ui/links', { key: null, body: {}, headers: HOST })).statusCode).toBe(401);
    const projectId = await h.createProject('scoped');
    const ci = await h.createKey({ purpose: 'ci', projectId, role: 'member' });
    const scoped = await h.request('POST', '/v1/ui/links', { key: ci.apiKey, body: {}, headers: HOST });
    expect(scoped.statusCode).toBe(403);
    expect(scoped.json().error.message).toContain('project-scoped');
  });

  it('on the daemon a session cookie counts only with its proof, and only from its own origin', async () => {
    const { cookie, proof } = await signIn();
    const call = (headers: Record<string, string>, method: 'GET' | 'POST' = 'GET') =>
      h.request(method, method === 'GET' ? '/v1/projects' : '/v1/projects', { key: null, headers: { ...HOST, cookie: `strata_session=${cookie}`, ...headers }, ...(method === 'POST' ? { body: { name: 'from the page' } } : {}) });
    expect((await call({ 'x-strata-ui-proof': proof })).statusCode).toBe(200);
    expect((await call({})).statusCode).toBe(401);
    expect((await call({ 'x-strata-ui-proof': `${proof.slice(0, -1)}${proof.endsWith('A') ? 'B' : 'A'}` })).statusCode).toBe(401);
    const other = await signIn();
    expect((await call({ 'x-strata-ui-proof': other.proof })).statusCode).toBe(401);
    // Writes from the page carry its own origin; any other origin (another port is another origin) is refused.
    expect((await call({ 'x-strata-ui-proof': proof, origin: 'http://127.0.0.1:7420', 'content-type': 'application/json' }, 'POST')).statusCode).toBe(201);
    for (const origin of ['http://127.0.0.1:7421', 'http://localhost:7420', 'null']) {
      const refused = await call({ 'x-strata-ui-proof': proof, origin, 'content-type': 'application/json' }, 'POST');
      expect(refused.statusCode, origin).toBe(403);
      expect(refused.json().error.code).toBe('FORBIDDEN_ORIGIN');
    }
  });

  it('a session opened with a key ends with the key: revoked, or at its expiry', async () => {
    const browse = (session: { cookie: string; proof: string }) =>
      h.request('GET', '/v1/projects', { key: null, headers: { ...HOST, cookie: `strata_session=${session.cookie}`, 'x-strata-ui-proof': session.proof } });
    const revoked = await h.createKey({ purpose: 'lab screen', role: 'admin' });
    const session = await signIn(revoked.apiKey);
    expect((await browse(session)).statusCode).toBe(200);
    await h.ok('POST', `/v1/keys/${revoked.keyId}/revoke`, { body: {} });
    expect((await browse(session)).statusCode).toBe(401);

    // A link made before the revocation and opened after it opens nothing.
    const late = await h.createKey({ purpose: 'kiosk', role: 'admin' });
    const { url } = await h.ok<{ url: string }>('POST', '/v1/ui/links', { body: {}, status: 201, key: late.apiKey });
    await h.ok('POST', `/v1/keys/${late.keyId}/revoke`, { body: {} });
    const opened = await h.request('GET', new URL(url).pathname + new URL(url).search, { key: null, headers: HOST });
    expect(opened.statusCode).toBe(401);
    expect(opened.headers['set-cookie']).toBeUndefined();

    // A key that expires in an hour opens a session of an hour, not of a working day.
    const brief = await h.createKey({ purpose: 'visitor', role: 'admin', expiresInHours: 1 });
    const visitor = await signIn(brief.apiKey);
    expect((await browse(visitor)).statusCode).toBe(200);
    h.clock.advance(3_600_000 + 1);
    expect((await browse(visitor)).statusCode).toBe(401);
  });

  it('serves only its own assets, with a strict content security policy', async () => {
    const root = await h.request('GET', '/', { key: null, headers: HOST });
    expect(root.statusCode).toBe(303);
    expect(root.headers['location']).toBe('/ui/');
    const page = await h.request('GET', '/ui/', { key: null, headers: HOST });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.body).toContain('/ui/app.js');
    // boot.js is inside the page, allowed by its hash and by nothing broader; no other inline script.
    const inline = [...page.body.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
    expect(inline).toHaveLength(1);
    expect(inline[0]).toContain('strataPrefetched');
    const csp = page.headers['content-security-policy'] as string;
    expect(csp).toContain(`'sha256-${createHash('sha256').update(inline[0]!).digest('base64')}'`);
    expect(csp).not.toContain('unsafe-inline');
    expect((await h.request('GET', '/ui/app.js', { key: null, headers: HOST })).headers['content-security-policy']).not.toContain('sha256-');
    expect((await h.request('GET', '/ui/app.js', { key: null, headers: HOST })).headers['content-type']).toBe('text/javascript; charset=utf-8');
    for (const name of ['..%2Fpackage.json', '%2E%2E%2F%2E%2E%2Fetc%2Fpasswd', 'nope.js', '.env', 'app.js%00.html']) {
      const response = await h.request('GET', `/ui/${name}`, { key: null, headers: HOST });
      expect(response.statusCode, name).toBe(404);
      expect(response.body).not.toContain('"name": "strata"');
    }
  });
});
