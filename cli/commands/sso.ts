// `strata sso`: an organization admin connects the organization's identity provider. create → publish
// the TXT record it prints → verify → test (signs in at that provider in the browser) → activate.

import type { Command } from 'commander';
import type { SsoConnection } from '../../engine/types.js';
import { type CommandContext, contextFor } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { sanitizeLine } from '../output.js';

interface Diagnosis {
  route: { mode: string; issuer: string } | null;
  reason: string;
}

/** The organization a command means: --org, else the caller's only one. */
async function orgOf(ctx: CommandContext, org: string | undefined): Promise<string> {
  if (org !== undefined) return org;
  const { items } = await ctx.client().json<{ items: Array<{ orgId: string; name: string }> }>('GET', '/v1/orgs');
  if (items.length === 1) return items[0]!.orgId;
  throw new CliError('USAGE', items.length === 0 ? 'you belong to no organization' : 'you belong to several organizations: pass --org ID', { exitCode: EXIT.usage });
}

function describe(ctx: CommandContext, connection: SsoConnection): void {
  ctx.output.line(`${connection.connectionId}  ${connection.active ? 'active' : 'inactive'}  ${sanitizeLine(connection.issuer)}`);
  ctx.output.line(`  client ${sanitizeLine(connection.clientId)}, audience ${sanitizeLine(connection.audience)}, tested: ${connection.testedAt === null ? 'no' : `yes (${sanitizeLine(connection.testedSubject ?? '')})`}`);
  for (const domain of connection.domains) {
    ctx.output.line(
      domain.verifiedAt === null
        ? `  ${domain.domain}: not verified — publish TXT "strata-domain-verification=${domain.verificationToken}", then: strata sso verify ${connection.connectionId} ${domain.domain}`
        : `  ${domain.domain}: verified`,
    );
  }
}

export function registerSsoCommands(program: Command): void {
  const sso = program.command('sso').description("your organization's own identity provider (admins): create, verify, test, activate");
  const path = (orgId: string, suffix = '') => `/v1/orgs/${encodeURIComponent(orgId)}/sso${suffix}`;

  sso
    .command('create')
    .description('register the identity provider and the email domains it signs in (inactive until verified and tested)')
    .requiredOption('--issuer <url>', 'issuer, exactly as its discovery document spells it')
    .requiredOption('--client-id <id>', 'public client registered there for `strata login` (PKCE, loopback redirect)')
    .requiredOption('--audience <aud>', 'audience its access tokens carry for this server')
    .requiredOption('--domain <domain...>', 'email domains whose people sign in there')
    .option('--token-type <type>', "'at+jwt' (default) or 'any' for providers that do not type access tokens (Okta, Entra)")
    .option('--org <orgId>', 'organization (default: yours)')
    .action(async (options: { issuer: string; clientId: string; audience: string; domain: string[]; tokenType?: string; org?: string }, command: Command) => {
      const ctx = contextFor(command);
      const body: Record<string, unknown> = { issuer: options.issuer, clientId: options.clientId, audience: options.audience, domains: options.domain };
      if (options.tokenType !== undefined) body['tokenType'] = options.tokenType;
      const connection = await ctx.client().json<SsoConnection>('POST', path(await orgOf(ctx, options.org)), { json: body });
      ctx.output.result(connection, () => describe(ctx, connection));
    });

  sso
    .command('list')
    .description('SSO connections of the organization')
    .option('--org <orgId>', 'organization (default: yours)')
    .action(async (options: { org?: string }, command: Command) => {
      const ctx = contextFor(command);
      const page = await ctx.client().json<{ items: SsoConnection[] }>('GET', path(await orgOf(ctx, options.org)));
      ctx.output.result(page, () => {
        if (page.items.length === 0) ctx.output.hint('no SSO connections');
        for (const connection of page.items) describe(ctx, connection);
      });
    });

  sso
    .command('verify <connection> <domain>')
    .description("check the domain's TXT record and mark it verified")
    .option('--org <orgId>', 'organization (default: yours)')
    .action(async (connectionId: string, domain: string, options: { org?: string }, command: Command) => {
      const ctx = contextFor(command);
      const orgId = await orgOf(ctx, options.org);
      const connection = await ctx
        .client()
        .json<SsoConnection>('POST', path(orgId, `/${encodeURIComponent(connectionId)}/domains/${encodeURIComponent(domain)}/verify`), { json: {} });
      ctx.output.result(connection, () => describe(ctx, connection));
    });

  sso
    .command('test <connection>')
    .description('sign in at the connection’s provider (browser, or the printed URL) and check its token is accepted')
    .option('--no-browser', 'only print the URL')
    .option('--org <orgId>', 'organization (default: yours)')
    .action(async (connectionId: string, options: { org?: string; browser: boolean }, command: Command) => {
      const ctx = contextFor(command);
      const orgId = await orgOf(ctx, options.org);
      const connection = await ctx.client().json<SsoConnection>('GET', path(orgId, `/${encodeURIComponent(connectionId)}`));
      const { loginWithBrowser } = await import('../login-flow.js');
      const login = await loginWithBrowser(
        { mode: 'sso', issuer: connection.issuer, clientId: connection.clientId, audience: connection.audience, scopes: connection.scopes, orgId },
        {
          openBrowser: options.browser,
          announce: (url) => process.stderr.write(`Sign in at ${connection.issuer} with an account of your organization:\n\n  ${url}\n\n`),
        },
      );
      const tested = await ctx
        .client()
        .json<SsoConnection>('POST', path(orgId, `/${encodeURIComponent(connectionId)}/test`), { json: { accessToken: login.accessToken } });
      ctx.output.result(tested, () => {
        ctx.output.line(`Test sign-in accepted (subject ${sanitizeLine(tested.testedSubject ?? '')})`);
        describe(ctx, tested);
      });
    });

  for (const [name, description] of [
    ['activate', 'route the verified domains to the provider and trust its tokens'],
    ['deactivate', 'stop: its tokens no longer authenticate, its people go back to the hosted sign-in'],
  ] as const) {
    sso
      .command(`${name} <connection>`)
      .description(description)
      .option('--org <orgId>', 'organization (default: yours)')
      .action(async (connectionId: string, options: { org?: string }, command: Command) => {
        const ctx = contextFor(command);
        const orgId = await orgOf(ctx, options.org);
        const connection = await ctx.client().json<SsoConnection>('POST', path(orgId, `/${encodeURIComponent(connectionId)}/${name}`), { json: {} });
        ctx.output.result(connection, () => describe(ctx, connection));
      });
  }

  sso
    .command('diagnose <email>')
    .description('which provider an email signs in with, and why')
    .option('--org <orgId>', 'organization (default: yours)')
    .action(async (email: string, options: { org?: string }, command: Command) => {
      const ctx = contextFor(command);
      const orgId = await orgOf(ctx, options.org);
      const diagnosis = await ctx.client().json<Diagnosis>('GET', `/v1/orgs/${encodeURIComponent(orgId)}/sso-diagnosis`, { query: { email } });
      ctx.output.result(diagnosis, () => {
        ctx.output.line(diagnosis.route === null ? `${email}: cannot sign in here` : `${email}: ${diagnosis.route.mode} sign-in at ${sanitizeLine(diagnosis.route.issuer)}`);
        ctx.output.line(`  ${sanitizeLine(diagnosis.reason)}`);
      });
    });
}
