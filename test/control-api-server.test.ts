import { createHash, randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStrataError } from '../engine/errors.js';
import { bootstrapHome } from '../server/bootstrap.js';
import { resolveHome } from '../server/home.js';
import { loadPepper, parsePepperValue, pepperPath, resolveEnvironment } from '../server/secrets.js';
import { isLoopbackAddress, parseListen, startServer } from '../server/serve.js';
import { tempDir } from './helpers/world.js';

function raw(url: string, options: { method?: string; path: string; headers: Record<string, string> }): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${options.path}`, { method: options.method ?? 'GET', headers: options.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('strata serve over a real socket', () => {
  let home: { path: string; cleanup: () => Promise<void> };
  let server: { url: string; close(): Promise<void> };
  let apiKey: string;
  let orgId: string;

  beforeAll(async () => {
    home = await tempDir('strata-serve-');
    ({ apiKey, orgId } = await bootstrapHome({ home: home.path, environment: 'local' }));
    server = await startServer({ home: home.path, listen: '127.0.0.1:0', logger: false, environment: 'local' });
  });
  afterAll(async () => {
    await server.close();
    await home.cleanup();
  });

  it('bootstraps once: pepper 0600 in a 0700 directory, then ALREADY_BOOTSTRAPPED', async () => {
    expect(apiKey).toMatch(/^rk\.local\.[0-9a-f]{16}\./);
    expect((await stat(pepperPath(home.path))).mode & 0o777).toBe(0o600);
    expect((await stat(join(home.path, 'secrets'))).mode & 0o777).toBe(0o700);
    expect((await stat(pepperPath(home.path))).size).toBe(32);
    await expect(bootstrapHome({ home: home.path, environment: 'local' })).rejects.toMatchObject({ code: 'ALREADY_BOOTSTRAPPED', status: 409 });
  });

  it('streams a multi-megabyte upload in and ranges of it out, with fetch', async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const auth = { authorization: `Bearer ${apiKey}` };
    const created = await fetch(`${server.url}/v1/projects`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'data' }) });
    expect(created.status).toBe(201);
    const { projectId } = (await created.json()) as { projectId: string };
    const data = randomBytes(6 * 1024 * 1024);
    // chunked upload: no content-length, 64 KiB pieces
    const pieces = Array.from({ length: data.length / 65536 }, (_, i) => data.subarray(i * 65536, (i + 1) * 65536));
    const put = await fetch(`${server.url}/v1/projects/${projectId}/fs/write?path=${encodeURIComponent('raw/run 1.bin')}`, {
      method: 'PUT',
      headers: { ...auth, 'content-type': 'application/octet-stream' },
      body: Readable.toWeb(Readable.from(pieces)) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    expect(put.status).toBe(201);
    expect(((await put.json()) as { version: { size: number } }).version.size).toBe(data.length);

    const whole = await fetch(`${server.url}/v1/projects/${projectId}/fs/read?path=raw/run%201.bin`, { headers: auth });
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-length')).toBe(String(data.length));
    const body = Buffer.from(await whole.arrayBuffer());
    expect(createHash('sha256').update(body).digest('hex')).toBe(createHash('sha256').update(data).digest('hex'));
    const part = await fetch(`${server.url}/v1/projects/${projectId}/fs/read?path=raw/run%201.bin`, { headers: { ...auth, range: 'bytes=1000000-1000099' } });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).equals(data.subarray(1_000_000, 1_000_100))).toBe(true);
    expect(part.headers.get('content-range')).toBe(`bytes 1000000-1000099/${data.length}`);

    const members = await fetch(`${server.url}/v1/orgs/${orgId}/members`, { headers: auth });
    expect(members.status).toBe(200);
    expect(members.headers.get('x-request-id')).toEqual(expect.any(String));
  });

  it('is loopback-only on a loopback address: foreign Host and browser Origin are refused', async () => {
    const auth = { authorization: `Bearer ${apiKey}` };
    const host = await raw(server.url, { path: '/v1/orgs', headers: { ...auth, host: 'rebind.evil.example' } });
    expect(host.status).toBe(403);
    expect(JSON.parse(host.body).error.code).toBe('FORBIDDEN_HOST');
    const origin = await raw(server.url, { path: '/v1/orgs', headers: { ...auth, origin: 'https://evil.example' } });
    expect(origin.status).toBe(403);
    expect(JSON.parse(origin.body).error.code).toBe('FORBIDDEN_ORIGIN');
    expect(Object.keys(origin.headers).some((k) => k.startsWith('access-control-'))).toBe(false);
    const unauth = await fetch(`${server.url}/v1/orgs`);
    expect(unauth.status).toBe(401);
    expect(unauth.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('answers malformed HTTP with the JSON error body and closes the connection', async () => {
    const { port } = new URL(server.url);
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      let text = '';
      socket.on('data', (c) => {
        text += c.toString();
      });
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400 /);
    expect(reply).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/);
    expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)).error.code).toBe('MALFORMED_REQUEST');
  });
});

describe('server configuration', () => {
  it('resolves the home: flag, STRATA_HOME, XDG_DATA_HOME, ~/.local/share', () => {
    expect(resolveHome('/x/y', { STRATA_HOME: '/s' })).toBe('/x/y');
    expect(resolveHome(undefined, { STRATA_HOME: '/s', XDG_DATA_HOME: '/d' })).toBe('/s');
    expect(resolveHome(undefined, { XDG_DATA_HOME: '/d' })).toBe('/d/strata');
    expect(resolveHome(undefined, {})).toBe(join(homedir(), '.local', 'share', 'strata'));
  });

  it('takes the pepper from STRATA_PEPPER (hex or base64) over the file, never echoing it', async () => {
    const dir = await tempDir('strata-pepper-');
    try {
      const bytes = randomBytes(32);
      expect((await loadPepper(dir.path, { create: false, env: { STRATA_PEPPER: bytes.toString('hex') } })).equals(bytes)).toBe(true);
      expect((await loadPepper(dir.path, { create: false, env: { STRATA_PEPPER: bytes.toString('base64') } })).equals(bytes)).toBe(true);
      expect(parsePepperValue(bytes.toString('base64url')).equals(bytes)).toBe(true);
      for (const bad of ['short', 'abcd', `${'a'.repeat(40)}!!`, 'ab'.repeat(8).slice(1), 'not a pepper at all, no way']) {
        let thrown: unknown;
        try {
          parsePepperValue(bad);
        } catch (error) {
          thrown = error;
        }
        expect(isStrataError(thrown, 'INVALID_ARGUMENT'), bad).toBe(true);
        expect((thrown as Error).message).not.toContain(bad);
      }
      await expect(loadPepper(dir.path, { create: false, env: {} })).rejects.toMatchObject({ code: 'ENOENT' });
      const created = await loadPepper(dir.path, { create: true, env: {} });
      expect(created).toHaveLength(32);
      // concurrent creators agree on one pepper
      const again = await Promise.all([1, 2, 3].map(() => loadPepper(dir.path, { create: true, env: {} })));
      for (const p of again) expect(p.equals(created)).toBe(true);
    } finally {
      await dir.cleanup();
    }
  });

  it('validates environment and listen address', () => {
    expect(resolveEnvironment(undefined, {})).toBe('local');
    expect(resolveEnvironment(undefined, { STRATA_ENV: 'prod' })).toBe('prod');
    expect(resolveEnvironment('ci', { STRATA_ENV: 'prod' })).toBe('ci');
    expect(() => resolveEnvironment('Prod.1', {})).toThrow(/environment/);
    expect(parseListen('127.0.0.1:0')).toEqual({ host: '127.0.0.1', port: 0 });
    expect(parseListen('[::1]:7420')).toEqual({ host: '::1', port: 7420 });
    expect(() => parseListen('127.0.0.1')).toThrow(/HOST:PORT/);
    expect(() => parseListen('h:70000')).toThrow(/HOST:PORT/);
    expect(['127.0.0.1', '127.1.2.3', '::1', 'localhost'].every(isLoopbackAddress)).toBe(true);
    expect(['0.0.0.0', '10.0.0.1', '::', 'example.org'].some(isLoopbackAddress)).toBe(false);
  });
});
