// `strata sso` driven as an admin would, then `strata login` by a person of that organization: the
// compiled CLI against the control API listening on loopback (DNS TXT answers injected), with two
// oidc-provider instances (the hosted identity and the lab's own provider); the test plays the browser.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, parseJson, runCli, tempDir } from './cli-harness.js';
import { type Harness, openHarness } from './control-api-harness.js';
import { withBrowser } from './helpers/browser-login.js';
import { CLI_CLIENT_ID, startTestProvider, type TestProvider } from './helpers/oidc-provider.js';

const LAB_AUDIENCE = 'api://lab-strata';
let hosted: TestProvider;
let lab: TestProvider;
let h: Harness;
let env: NodeJS.ProcessEnv;
let config: { remove(): Promise<void> };
const txt = new Map<string, string[][]>();

beforeAll(async () => {
  hosted = await startTestProvider({ audience: 'https://strata.test/api' });
  lab = await startTestProvider({ audience: LAB_AUDIENCE });
  h = await openHarness({
    clockStart: Date.now(),
    signIn: { issuer: hosted.issuer, audience: 'https://strata.test/api', clientId: CLI_CLIENT_ID, scopes: ['openid', 'offline_access'], tokenType: 'at+jwt' },
    txtResolver: async (name) => txt.get(name) ?? [],
  });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = h.app.server.address() as { port: number };
  const dir = await tempDir('strata-cli-sso-');
  config = dir;
  env = { ...baseEnv(dir.path), STRATA_SERVER_URL: `http://127.0.0.1:${port}`, STRATA_API_KEY: h.ownerKey };
}, 60_000);

afterAll(async () => {
  await h?.dispose();
  await hosted?.close();
  await lab?.close();
  await config?.remove();
});

describe('strata sso', () => {
  it('an admin connects the lab provider; a person of the lab then signs in there with strata login', async () => {
    const created = await runCli(
      ['sso', 'create', '--issuer', lab.issuer, '--client-id', CLI_CLIENT_ID, '--audience', LAB_AUDIENCE, '--domain', 'lab.example', '--json'],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    const connection = parseJson<{ connectionId: string; domains: Array<{ verificationToken: string }> }>(created);
    const id = connection.connectionId;
    const human = await runCli(['sso', 'list'], env);
    expect(human.stdout).toContain(`publish TXT "strata-domain-verification=${connection.domains[0]!.verificationToken}"`);

    const unverified = await runCli(['sso', 'verify', id, 'lab.example'], env);
    expect(unverified.code).not.toBe(0);
    expect(unverified.stderr).toContain('SSO_DOMAIN_NOT_VERIFIED');
    txt.set('lab.example', [[`strata-domain-verification=${connection.domains[0]!.verificationToken}`]]);
    expect((await runCli(['sso', 'verify', id, 'lab.example'], env)).stdout).toContain('lab.example: verified');

    lab.signInAs({ sub: 'it-admin', email: 'it@lab.example', name: 'IT' });
    const tested = await withBrowser(['sso', 'test', id, '--no-browser'], env, lab.issuer);
    expect(tested.code, tested.stderr).toBe(0);
    expect(tested.stdout).toContain('Test sign-in accepted (subject it-admin)');
    const activated = await runCli(['sso', 'activate', id], env);
    expect(activated.code, activated.stderr).toBe(0);
    expect(activated.stdout).toContain(`${id}  active`);
    const diagnosis = await runCli(['sso', 'diagnose', 'ada@lab.example'], env);
    expect(diagnosis.stdout).toContain(`ada@lab.example: sso sign-in at ${lab.issuer}`);

    // Ada signs in: the server sends her to the lab's provider, and she lands in the Lab organization.
    const person = { ...env };
    delete person['STRATA_API_KEY'];
    lab.signInAs({ sub: 'ada', email: 'ada@lab.example', name: 'Ada Lovelace' });
    const login = await withBrowser(['login', '--email', 'ada@lab.example', '--no-browser'], person, lab.issuer);
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout).toContain('as Ada Lovelace <ada@lab.example>');
    expect(login.stdout).toContain('Organizations: Lab (member)');
  });
});
