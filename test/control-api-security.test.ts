import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, openHarness } from './control-api-harness.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

describe('loopback-only API (the daemon)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await openHarness({ loopbackOnly: true });
  });
  afterAll(async () => {
    await h.dispose();
  });

  it('accepts only loopback Host names', async () => {
    for (const host of ['localhost', 'localhost:7420', '127.0.0.1', '127.0.0.1:1', '[::1]', '[::1]:7420', 'LOCALHOST']) {
      const res = await h.request('GET', '/v1/orgs', { headers: { host } });
      expect(res.statusCode, host).toBe(200);
    }
    for (const host of ['evil.example', 'evil.example:7420', 'localhost.evil.example', '127.0.0.2', '127.0.0.1.nip.io', '0.0.0.0', '[::2]', 'localhost:x']) {
      const res = await h.request('GET', '/v1/orgs', { headers: { host } });
      expect(res.statusCode, host).toBe(403);
      expect(res.json().error).toMatchObject({ code: 'FORBIDDEN_HOST', requestId: res.headers['x-request-id'] });
    }
    // also before authentication and for unknown routes and public routes
    expect((await h.request('GET', '/nope', { key: null, headers: { host: 'evil.example' } })).json().error.code).toBe('FORBIDDEN_HOST');
    expect((await h.request('GET', '/healthz', { key: null, headers: { host: 'evil.example' } })).json().error.code).toBe('FORBIDDEN_HOST');
  });

  it('refuses any browser Origin but its own (even a loopback one on another port), and never sends CORS headers', async () => {
    for (const origin of ['http://localhost:7420', 'http://127.0.0.1', 'null', 'https://evil.example']) {
      const res = await h.request('GET', '/v1/orgs', { headers: { origin } });
      expect(res.statusCode, origin).toBe(403);
      expect(res.json().error.code).toBe('FORBIDDEN_ORIGIN');
      expect(Object.keys(res.headers).filter((k) => k.startsWith('access-control-'))).toEqual([]);
    }
    const preflight = await h.request('OPTIONS', '/v1/orgs', {
      key: null,
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'PUT' },
    });
    expect(preflight.statusCode).toBe(403);
    expect(Object.keys(preflight.headers).filter((k) => k.startsWith('access-control-'))).toEqual([]);
    const before = await h.ok('GET', '/v1/projects');
    const write = await h.request('POST', '/v1/projects', { body: { name: 'csrf' }, headers: { origin: 'http://localhost' } });
    expect(write.statusCode).toBe(403);
    expect(await h.ok('GET', '/v1/projects')).toEqual(before);
  });
});

describe('request ids, trace ids and logs', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await openHarness();
  });
  afterAll(async () => {
    await h.dispose();
  });

  it('sets x-request-id on every response, keeping a safe incoming id only', async () => {
    const generated = await h.request('GET', '/healthz', { key: null });
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const kept = await h.request('GET', '/nope', { headers: { 'x-request-id': 'ci-run-42.step:3' } });
    expect(kept.headers['x-request-id']).toBe('ci-run-42.step:3');
    expect(kept.json().error.requestId).toBe('ci-run-42.step:3');
    for (const unsafe of ['has space', 'x'.repeat(200), '{"inject":1}', '-leading']) {
      const res = await h.request('GET', '/healthz', { key: null, headers: { 'x-request-id': unsafe } });
      expect(res.headers['x-request-id']).not.toBe(unsafe);
      expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('puts the W3C trace id in error bodies and in every log line of the request', async () => {
    const res = await h.request('GET', '/v1/projects/missing', { headers: { traceparent: TRACEPARENT } });
    expect(res.json().error).toMatchObject({ code: 'PROJECT_NOT_FOUND', traceId: TRACE_ID });
    const lines = h.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['requestId'] === res.headers['x-request-id']);
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of lines) expect(line['traceId']).toBe(TRACE_ID);
    for (const bad of ['ff-' + TRACE_ID + '-00f067aa0ba902b7-01', `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`, '00-xyz', `00-${TRACE_ID}-${'0'.repeat(16)}-01`]) {
      const r = await h.request('GET', '/v1/projects/missing', { headers: { traceparent: bad } });
      expect(r.json().error.traceId, bad).toBeUndefined();
    }
  });

  it('logs every request line with its request id and never a key', async () => {
    const created = await h.createKey({ purpose: 'ci' });
    const secrets = [h.ownerKey, created.apiKey].map((k) => k.split('.')[3]!);
    await h.request('GET', '/v1/projects', { key: created.apiKey });
    await h.request('GET', '/v1/projects', { key: `${created.apiKey.slice(0, -2)}xx` });
    await h.request('POST', '/v1/keys', { body: { purpose: 'another' } });
    await h.request('POST', '/v1/projects', { body: { name: 'x', apiKey: h.ownerKey } });
    // a key put in the URL by mistake is refused, and not written to the log with the request line
    const inUrl = await h.request('GET', `/v1/projects?limit=5&access_token=${created.apiKey}&token=${created.apiKey}`, { key: null });
    expect(inUrl.statusCode).toBe(401);
    // a careless log call with credentials in it is redacted too
    h.app.log.info(
      {
        req: { headers: { authorization: `Bearer ${h.ownerKey}` } },
        headers: { authorization: `Bearer ${h.ownerKey}`, cookie: 'session=abc' },
        apiKey: h.ownerKey,
        nested: { apiKey: created.apiKey },
      },
      'careless',
    );
    const text = h.logs.join('');
    for (const secret of secrets) expect(text).not.toContain(secret);
    expect(text).not.toContain('session=abc');
    const careless = h.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['msg'] === 'careless')!;
    expect(careless).toMatchObject({
      apiKey: '[redacted]',
      nested: { apiKey: '[redacted]' },
      headers: { authorization: '[redacted]', cookie: '[redacted]' },
    });
    expect(text).toContain('/v1/projects?limit=5&access_token=[redacted]&token=[redacted]');
    const requestLines = h.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => 'req' in l || 'res' in l);
    expect(requestLines.length).toBeGreaterThan(8);
    for (const line of requestLines) if (line['msg'] !== 'careless') expect(line['requestId']).toEqual(expect.any(String));
  });
});
