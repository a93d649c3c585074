// A person's workstation syncs with their sign-in, no API key anywhere: `strata login`, then
// `strata init DIR --server URL --project ID`, and the daemon pushes with the person's token
// (refreshing it as needed); the server's history names the person.

import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from './cli-harness.js';
import { withBrowser } from './helpers/browser-login.js';
import { CLI_CLIENT_ID, startTestProvider, type TestProvider } from './helpers/oidc-provider.js';
import { openSyncWorld, type SyncWorld, waitFor } from './sync-harness.js';

const AUDIENCE = 'https://strata.test/api';
let provider: TestProvider;
let world: SyncWorld;

beforeAll(async () => {
  provider = await startTestProvider({ audience: AUDIENCE });
  world = await openSyncWorld('strata-sync-login-', {
    serveEnv: { STRATA_OIDC_ISSUER: provider.issuer, STRATA_OIDC_AUDIENCE: AUDIENCE, STRATA_OIDC_CLIENT_ID: CLI_CLIENT_ID },
  });
}, 60_000);

afterAll(async () => {
  await world?.dispose();
  await provider?.close();
});

describe('sync with a sign-in', () => {
  it('links and pushes as the signed-in person, with no API key', async () => {
    const ws = world.workstation('ada');
    delete ws.env['STRATA_API_KEY'];
    provider.signInAs({ sub: 'ada', email: 'ada@lab.example', name: 'Ada Lovelace' });
    const login = await withBrowser(['login', '--email', 'ada@lab.example', '--no-browser', '--server', world.url], ws.env, provider.issuer);
    expect(login.code, login.stderr).toBe(0);
    const me = parseJson<{ identity: { identityId: string } }>(await ws.cli(['whoami', '--json', '--server', world.url]));
    const orgs = (await (await fetch(`${world.url}/v1/orgs`, { headers: { authorization: `Bearer ${world.apiKey}` } })).json()) as { items: Array<{ orgId: string }> };
    const added = await fetch(`${world.url}/v1/orgs/${orgs.items[0]!.orgId}/members/${me.identity.identityId}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${world.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ role: 'member' }),
    });
    expect(added.status).toBe(200);

    await ws.start();
    const init = await ws.cli(['init', ws.dir, '--server', world.url, '--project', world.projectId]);
    expect(init.code, init.stderr).toBe(0);
    // No key was kept for the server: the daemon uses the sign-in.
    expect(await readdir(join(ws.home, 'secrets')).then((names) => names.includes('sync-credentials.json')).catch(() => false)).toBe(false);
    await writeFile(join(ws.dir, 'notes.md'), 'signed in\n');
    const wait = await ws.cli(['sync', 'wait', '--timeout', '60', '--json'], { timeoutMs: 90_000 });
    expect(wait.code, `${wait.stderr}\n${ws.daemonLog()}`).toBe(0);

    await waitFor(
      'the version on the server',
      async () => {
        const response = await fetch(`${world.url}/v1/projects/${world.projectId}/history?path=notes.md`, { headers: { authorization: `Bearer ${world.apiKey}` } });
        return response.status === 200 && ((await response.json()) as { items: unknown[] }).items.length > 0 ? true : undefined;
      },
      30_000,
    );
    const history = (await (
      await fetch(`${world.url}/v1/projects/${world.projectId}/history?path=notes.md`, { headers: { authorization: `Bearer ${world.apiKey}` } })
    ).json()) as { items: Array<{ actor: { id: string; kind: string; name: string } }> };
    expect(history.items[0]!.actor).toStrictEqual({ id: me.identity.identityId, kind: 'user', name: 'Ada Lovelace' });
  });
});
