// `strata login` / `logout` / `whoami`: a person signs in to a team server with their organization's
// identity provider (the server says which: POST /auth/resolve), and the CLI and daemon then use the
// token instead of an API key. CI and headless nodes keep using API keys (STRATA_API_KEY).

import type { Command } from 'commander';
import { createClient } from '../client.js';
import { contextFor } from '../context.js';
import { credentialsPath, removeLogin, saveLogin } from '../credentials.js';
import { sanitizeLine } from '../output.js';
import { CLI_VERSION } from '../version.js';

interface Me {
  identity: { identityId: string; kind: string; name: string; email: string | null };
  authKind: string;
  keyId: string | null;
  projectScope: string | null;
  organizations: Array<{ orgId: string; name: string; role: string }>;
  memberships: Array<{ projectId: string; name: string; access: string }>;
}

export function registerLoginCommands(program: Command): void {
  program
    .command('login')
    .description('sign in to the server with your identity provider (authorization code + PKCE; the browser opens, or visit the printed URL)')
    .requiredOption('--email <address>', 'your email: the server routes it to your organization’s sign-in (env STRATA_EMAIL)', process.env['STRATA_EMAIL'])
    .option('--no-browser', 'do not open a browser; only print the URL (for a login node: open it on your own machine)')
    .option('--device', 'device sign-in (no browser and no redirect here): open the printed URL on any device and confirm the code')
    .action(async (options: { email: string; browser: boolean; device?: boolean }, command: Command) => {
      const ctx = contextFor(command);
      const { serverUrl } = ctx.target();
      const anonymous = createClient({ serverUrl, apiKey: undefined, version: CLI_VERSION });
      const { loginWithBrowser, loginWithDeviceCode } = await import('../login-flow.js');
      const route = await anonymous.json<import('../login-flow.js').SignInRoute>('POST', '/auth/resolve', { json: { email: options.email, clientKind: 'cli' } });
      const login =
        options.device === true
          ? await loginWithDeviceCode(route, {
              announce: (url, code) =>
                process.stderr.write(`On any device with a browser, open:\n\n  ${url}\n\nand confirm the code ${code}. Waiting (Ctrl-C to cancel)...\n`),
            })
          : await loginWithBrowser(route, {
              openBrowser: options.browser,
              loginHint: options.email,
              announce: (url) => process.stderr.write(`To sign in, open this URL in a browser:\n\n  ${url}\n\nWaiting for the identity provider (Ctrl-C to cancel)...\n`),
            });
      const me = await createClient({ serverUrl, apiKey: undefined, tokenSource: async () => login.accessToken, version: CLI_VERSION }).json<Me>('GET', '/auth/me');
      login.name = me.identity.name;
      const path = saveLogin(serverUrl, login);
      ctx.output.result({ serverUrl, issuer: route.issuer, mode: route.mode, identity: me.identity, organizations: me.organizations, credentials: path }, () => {
        ctx.output.line(`Signed in to ${serverUrl} as ${sanitizeLine(me.identity.name)}${me.identity.email ? ` <${sanitizeLine(me.identity.email)}>` : ''}`);
        if (me.organizations.length === 0) ctx.output.line('You belong to no organization yet: ask an admin to add you (your identity id: ' + me.identity.identityId + ')');
        else ctx.output.line(`Organizations: ${me.organizations.map((org) => `${sanitizeLine(org.name)} (${org.role})`).join(', ')}`);
      });
    });

  program
    .command('logout')
    .description('forget the sign-in to the server (and revoke its refresh token at the identity provider)')
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const { serverUrl } = ctx.target();
      const login = removeLogin(serverUrl);
      let revoked = false;
      if (login !== null) {
        const { revokeLogin } = await import('../login-flow.js');
        revoked = await revokeLogin(login);
      }
      ctx.output.result({ serverUrl, signedOut: login !== null, revoked }, () => {
        ctx.output.line(login === null ? `Not signed in to ${serverUrl}` : `Signed out of ${serverUrl}${revoked ? ' (refresh token revoked)' : ''}`);
      });
    });

  program
    .command('whoami')
    .description('who the server says you are (GET /auth/me): identity, how you authenticated, organizations, memberships')
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const me = await ctx.client().json<Me>('GET', '/auth/me');
      ctx.output.result(me, () => {
        const via = me.authKind === 'api-key' ? `API key ${me.keyId}${me.projectScope ? ` (project ${me.projectScope} only)` : ''}` : `sign-in (${credentialsPath()})`;
        ctx.output.line(`${sanitizeLine(me.identity.name)}${me.identity.email ? ` <${sanitizeLine(me.identity.email)}>` : ''} — ${me.identity.kind} ${me.identity.identityId}, via ${via}`);
        for (const org of me.organizations) ctx.output.line(`  ${sanitizeLine(org.name)}: ${org.role}`);
        for (const project of me.memberships) ctx.output.line(`  project ${sanitizeLine(project.name)}: ${project.access}`);
        if (me.organizations.length === 0) ctx.output.line('  no organization');
      });
    });
}
