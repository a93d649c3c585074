import type { Command } from 'commander';
import type { ApiKeyRecord } from '../../engine/types.js';
import { type CommandContext, contextFor, parseCount } from '../context.js';
import { formatTime, sanitizeLine } from '../output.js';

/** What the API returns for a key: the record without its HMAC. */
type KeyMetadata = Omit<ApiKeyRecord, 'secretHmac'>;

interface CreatedKey {
  apiKey: string;
  key: KeyMetadata;
}

export function registerKeyCommands(program: Command): void {
  const keys = program.command('keys').alias('key').description('API keys for services and CI (secrets are shown once)');

  keys
    .command('create')
    .description('create a key; scoped to --project ID if given, else to the whole organization')
    .requiredOption('--purpose <text>', 'what the key is for (shown in listings and the audit log)')
    .option('--role <role>', 'role of the key (owner, admin, member, viewer; never above yours)')
    .option('--org <orgId>', 'organization (default: yours)')
    .option('--expires-in-days <n>', 'the key stops working after N days')
    .option('--expires-in-hours <n>', 'the key stops working after N hours (a CI job, a day of work)')
    .option('--as <who>', "'self': the key acts as you (default when you signed in with `strata login`); 'service': as a new service identity")
    .option('--rotate-in-days <n>', 'the key should be rotated within N days')
    .action(
      async (
        options: { purpose: string; role?: string; org?: string; expiresInDays?: string; expiresInHours?: string; rotateInDays?: string; as?: string },
        command: Command,
      ) => {
        const ctx = contextFor(command);
        const body: Record<string, unknown> = { purpose: options.purpose };
        // Only an explicit --project flag scopes the key: an ambient STRATA_PROJECT_ID silently narrowing
        // (or not) a credential would be a surprise either way.
        if (ctx.flags.project) body['projectId'] = ctx.flags.project;
        if (options.org) body['orgId'] = options.org;
        if (options.role) body['role'] = options.role;
        const expires = parseCount(options.expiresInDays, '--expires-in-days', { min: 1 });
        if (expires !== undefined) body['expiresInDays'] = expires;
        const hours = parseCount(options.expiresInHours, '--expires-in-hours', { min: 1 });
        if (hours !== undefined) body['expiresInHours'] = hours;
        if (options.as !== undefined) body['actAs'] = options.as;
        const rotate = parseCount(options.rotateInDays, '--rotate-in-days', { min: 1 });
        if (rotate !== undefined) body['rotateInDays'] = rotate;
        const created = await ctx.client().json<CreatedKey>('POST', '/v1/keys', { json: body });
        printNewKey(ctx, created, 'created');
      },
    );

  keys
    .command('list')
    .description('list keys (never their secrets)')
    .option('--org <orgId>', 'organization (default: yours)')
    .action(async (options: { org?: string }, command: Command) => {
      const ctx = contextFor(command);
      const page = await ctx.client().json<{ items: KeyMetadata[] }>('GET', '/v1/keys', { query: { orgId: options.org } });
      ctx.output.result(page, () => {
        if (page.items.length === 0) {
          ctx.output.hint('no keys');
          return;
        }
        const now = Date.now();
        ctx.output.table(
          ['KEY ID', 'STATUS', 'SCOPE', 'PURPOSE', 'CREATED', 'EXPIRES', 'LAST USED'],
          page.items.map((k) => [
            k.keyId,
            keyStatus(k, now),
            k.projectId ? `project ${k.projectId}` : 'organization',
            k.purpose,
            formatTime(k.createdAt),
            formatTime(k.expiresAt) || 'never',
            formatTime(k.lastUsedAt) || 'never',
          ]),
        );
      });
    });

  keys
    .command('rotate')
    .description('issue a replacement key; the old one keeps working for the grace period')
    .argument('<keyId>', 'key id (from `strata keys list`)')
    .option('--grace-seconds <n>', 'how long the old key keeps working (server default: 86400)')
    .action(async (keyId: string, options: { graceSeconds?: string }, command: Command) => {
      const ctx = contextFor(command);
      const grace = parseCount(options.graceSeconds, '--grace-seconds');
      const created = await ctx
        .client()
        .json<CreatedKey>('POST', `/v1/keys/${encodeURIComponent(keyId)}/rotate`, {
          json: grace === undefined ? {} : { graceSeconds: grace },
        });
      printNewKey(ctx, created, `rotated ${keyId}; new key`);
    });

  keys
    .command('revoke')
    .description('revoke a key immediately')
    .argument('<keyId>', 'key id')
    .action(async (keyId: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const key = await ctx.client().json<KeyMetadata>('POST', `/v1/keys/${encodeURIComponent(keyId)}/revoke`);
      ctx.output.result(key, () => ctx.output.line(`revoked ${key.keyId} (${sanitizeLine(key.purpose)})`));
    });
}

/** The secret goes alone on stdout (`KEY=$(strata keys create ...)` works); the rest is a hint. */
function printNewKey(ctx: CommandContext, created: CreatedKey, verb: string): void {
  ctx.output.result(created, () => {
    ctx.output.line(created.apiKey);
    const scope = created.key.projectId ? `project ${created.key.projectId}` : 'organization';
    ctx.output.hint(
      `${verb} ${created.key.keyId} (${scope}, purpose: ${sanitizeLine(created.key.purpose)}` +
        `${created.key.expiresAt ? `, expires ${formatTime(created.key.expiresAt)}` : ''}).` +
        ' The key above is shown only this once: store it in your secret manager.',
    );
  });
}

function keyStatus(key: KeyMetadata, now: number): string {
  if (key.revokedAt) return 'revoked';
  if (key.expiresAt && Date.parse(key.expiresAt) <= now) return 'expired';
  if (key.graceUntil) return Date.parse(key.graceUntil) <= now ? 'rotated-out' : 'rotating';
  return 'active';
}
