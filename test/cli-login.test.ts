// `strata login` / `whoami` / `logout` as a person uses them: the compiled CLI against `strata serve`
// with a hosted identity (oidc-provider on loopback); the test plays the browser.

import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson, runCli, servedHome } from './cli-harness.js';
import { startSignIn } from './helpers/browser-login.js';
import { browseToRedirect, CLI_CLIENT_ID, confirmDeviceCode, startTestProvider, type TestProvider } from './helpers/oidc-provider.js';

const AUDIENCE = 'https://strata.test/api';

let provider: TestProvider;
let served: Awaited<ReturnType<typeof servedHome>>;
let env: NodeJS.ProcessEnv;

/** Starts `strata login`, waits for the URL it prints. */
const startLogin = (email: string) => startSignIn(['login', '--email', email, '--no-browser'], env);

beforeAll(async () => {
  provider = await startTestProvider({ audience: AUDIENCE });
  served = await servedHome('strata-login-', { STRATA_OIDC_ISSUER: provider.issuer, STRATA_OIDC_AUDIENCE: AUDIENCE, STRATA_OIDC_CLIENT_ID: CLI_CLIENT_ID });
  env = { ...served.env };
  delete env['STRATA_API_KEY'];
}, 60_000);

afterAll(async () => {
  await served?.dispose();
  await provider?.close();
});

describe('strata login', () => {
  it('signs a person in with code + PKCE through the loopback redirect; whoami, refresh and logout work', async () => {
    provider.signInAs({ sub: 'alice', email: 'alice@lab.example', name: 'Alice Example' });
    const login = await startLogin('alice@lab.example');
    const url = new URL(login.url);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('resource')).toBe(AUDIENCE);
    expect(url.searchParams.get('login_hint')).toBe('alice@lab.example');
    const callback = await browseToRedirect(login.url, provider.issuer);
    expect(callback.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const page = await fetch(callback);
    expect(page.status).toBe(200);
    const result = await login.done;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`Signed in to ${served.server.url} as Alice Example <alice@lab.example>`);

    const credentials = join(env['XDG_CONFIG_HOME']!, 'strata', 'credentials.json');
    expect((await stat(credentials)).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(await readFile(credentials, 'utf8')) as { servers: Record<string, { accessToken: string; refreshToken: string | null; expiresAt: number }> };
    const first = stored.servers[served.server.url]!;
    expect(first.refreshToken).not.toBeNull();

    const who = await runCli(['whoami', '--json'], env);
    expect(who.code, who.stderr).toBe(0);
    const me = parseJson<{ identity: { identityId: string; kind: string; name: string }; authKind: string }>(who);
    expect(me).toMatchObject({ identity: { kind: 'user', name: 'Alice Example' }, authKind: 'oidc' });

    // An owner adds her; she then works with her sign-in and no key at all.
    const add = await fetch(`${served.server.url}/v1/orgs/${(await ownerOrg()).orgId}/members/${me.identity.identityId}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${served.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ role: 'member' }),
    });
    expect(add.status).toBe(200);
    const created = await runCli(['project', 'create', 'alice-thesis', '--json'], env);
    expect(created.code, created.stderr).toBe(0);

    // The stored token is about to expire: the next command refreshes it first and saves the new one.
    stored.servers[served.server.url]!.expiresAt = Date.now() + 5_000;
    await writeFile(credentials, JSON.stringify(stored));
    const again = await runCli(['whoami', '--json'], env);
    expect(again.code, again.stderr).toBe(0);
    const refreshed = (JSON.parse(await readFile(credentials, 'utf8')) as typeof stored).servers[served.server.url]!;
    expect(refreshed.accessToken).not.toBe(first.accessToken);
    expect(refreshed.expiresAt).toBeGreaterThan(Date.now() + 60_000);
    expect((await stat(credentials)).mode & 0o777).toBe(0o600);

    // She makes herself a key for CI; the key acts as her.
    const made = await runCli(['keys', 'create', '--purpose', 'thesis CI', '--expires-in-hours', '3', '--json'], env);
    expect(made.code, made.stderr).toBe(0);
    const ciKey = parseJson<{ apiKey: string; key: { identityId: string; expiresAt: string } }>(made);
    expect(ciKey.key.identityId).toBe(me.identity.identityId);
    const asKey = await runCli(['whoami', '--json'], { ...env, STRATA_API_KEY: ciKey.apiKey });
    expect(parseJson<{ identity: { identityId: string }; authKind: string }>(asKey)).toMatchObject({ identity: { identityId: me.identity.identityId }, authKind: 'api-key' });

    const out = await runCli(['logout'], env);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain(`Signed out of ${served.server.url}`);
    const after = await runCli(['whoami'], env);
    expect(after.code).toBe(5);
    expect(after.stderr).toContain('strata login');
  });

  it('a redirect with the wrong state is refused and nothing is stored', async () => {
    const login = await startLogin('bob@lab.example');
    const callback = await browseToRedirect(login.url, provider.issuer);
    callback.searchParams.set('state', 'forged-state');
    expect((await fetch(callback)).status).toBe(400);
    const result = await login.done;
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(/sign-in failed/i);
    const who = await runCli(['whoami'], env);
    expect(who.code).toBe(5);
  });

  it('--device: the person confirms a code on another device; the CLI polls until they did', async () => {
    provider.signInAs({ sub: 'hpc-user', email: 'hpc@lab.example', name: 'HPC User' });
    const login = await startSignIn(['login', '--email', 'hpc@lab.example', '--device'], env);
    const { url } = login;
    const stderr = login.stderr();
    expect(stderr).toMatch(/confirm the code [A-Z0-9-]+/);
    await confirmDeviceCode(url);
    const result = await login.done;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('as HPC User <hpc@lab.example>');
    const who = await runCli(['whoami', '--json'], env);
    expect(parseJson<{ identity: { name: string }; authKind: string }>(who)).toMatchObject({ identity: { name: 'HPC User' }, authKind: 'oidc' });
    await runCli(['logout'], env);
  });

  it('a server without sign-in says so', async () => {
    const plain = await servedHome('strata-login-plain-');
    try {
      const result = await runCli(['login', '--email', 'a@b.example', '--no-browser'], { ...plain.env, STRATA_API_KEY: undefined });
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain('no sign-in configured');
    } finally {
      await plain.dispose();
    }
  });
});

async function ownerOrg(): Promise<{ orgId: string }> {
  const response = await fetch(`${served.server.url}/v1/orgs`, { headers: { authorization: `Bearer ${served.apiKey}` } });
  const body = (await response.json()) as { items: Array<{ orgId: string }> };
  return body.items[0]!;
}
