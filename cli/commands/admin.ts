import type { Command } from 'commander';
import { contextFor } from '../context.js';

export function registerAdminCommands(program: Command): void {
  const admin = program.command('admin').description('set up a Strata home (runs in-process, no server needed)');

  admin
    .command('bootstrap')
    .description('create the organization and its first owner API key in a new home; prints the key once')
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .option('--environment <name>', 'environment tag inside new keys (rk.<environment>.…)')
    .action(async (options: { home?: string; environment?: string }, command: Command) => {
      const ctx = contextFor(command);
      const { resolveHome } = await import('../../server/home.js');
      const { bootstrapHome } = await import('../../server/bootstrap.js');
      const home = resolveHome(options.home);
      const result = await bootstrapHome({
        home,
        ...(options.environment === undefined ? {} : { environment: options.environment }),
      });
      ctx.output.result({ apiKey: result.apiKey, orgId: result.orgId, keyId: result.keyId, identityId: result.identityId }, () => {
        ctx.output.line(result.apiKey);
        ctx.output.hint(
          `bootstrapped ${home}: organization ${result.orgId}, owner key ${result.keyId}.\n` +
            'The key above is shown only this once. Use it with:\n' +
            '  export STRATA_API_KEY=<the key above>',
        );
      });
    });

  const org = admin.command('org').alias('orgs').description("the deployment's organizations (the server operator's, on the home itself)");
  org
    .command('create <name>')
    .description('another organization with its own owner API key (printed once); its owner then runs it over the API')
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .option('--environment <name>', 'environment tag inside new keys (rk.<environment>.…)')
    .action(async (name: string, options: { home?: string; environment?: string }, command: Command) => {
      const ctx = contextFor(command);
      const { resolveHome } = await import('../../server/home.js');
      const { createOrganizationInHome } = await import('../../server/bootstrap.js');
      const home = resolveHome(options.home);
      const result = await createOrganizationInHome({ home, name, ...(options.environment === undefined ? {} : { environment: options.environment }) });
      ctx.output.result({ apiKey: result.apiKey, orgId: result.orgId, keyId: result.keyId, identityId: result.identityId }, () => {
        ctx.output.line(result.apiKey);
        ctx.output.hint(`organization ${result.orgId} ('${name}'), owner key ${result.keyId}. The key above is shown only this once: hand it to the organization's owner.`);
      });
    });
  org
    .command('list')
    .description('every organization of the home')
    .option('--home <dir>', 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)')
    .action(async (options: { home?: string }, command: Command) => {
      const ctx = contextFor(command);
      const { resolveHome } = await import('../../server/home.js');
      const { listOrganizationsInHome } = await import('../../server/bootstrap.js');
      const items = await listOrganizationsInHome(resolveHome(options.home));
      ctx.output.result({ items }, () => ctx.output.table(['ORG ID', 'NAME', 'CREATED'], items.map((o) => [o.orgId, o.name, o.createdAt])));
    });
}
