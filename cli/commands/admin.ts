import type { Command } from 'commander';
import { contextFor } from '../context.js';

const HOME_HELP = 'Strata home (default: $STRATA_HOME, else $XDG_DATA_HOME/strata)';

interface StorageOptions {
  home?: string;
  config?: string;
  database?: string;
  objects?: string;
}

/** The home's storage options, as `strata serve` takes them, so an operator names the same store. */
function storageOptions(command: Command): Command {
  return command
    .option('--home <dir>', HOME_HELP)
    .option('--config <file>', "the server's JSON config file (its database and secrets)")
    .option('--database <url>', 'postgres://… metadata database (env STRATA_DATABASE_URL; default: SQLite in the home)');
}

async function serverEnv(options: StorageOptions): Promise<{ home: string; env: NodeJS.ProcessEnv }> {
  const { serveEnvironment } = await import('../../server/serve-config.js');
  const { withStorageFlags } = await import('./serve.js');
  const { resolveHome } = await import('../../server/home.js');
  const env = withStorageFlags(serveEnvironment(options.config), options);
  return { home: resolveHome(options.home, env), env };
}

export function registerAdminCommands(program: Command): void {
  const admin = program.command('admin').description('set up a Strata home (runs in-process, no server needed)');

  storageOptions(admin.command('bootstrap').description('create the organization and its first owner API key in a new home; prints the key once'))
    .option('--environment <name>', 'environment tag inside new keys (rk.<environment>.…)')
    .action(async (options: StorageOptions & { environment?: string }, command: Command) => {
      const ctx = contextFor(command);
      const { bootstrapHome } = await import('../../server/bootstrap.js');
      const { home, env } = await serverEnv(options);
      const result = await bootstrapHome({
        home,
        env,
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

  registerMigrateStorageCommand(admin);

  const org = admin.command('org').alias('orgs').description("the deployment's organizations (the server operator's, on the home itself)");
  storageOptions(org.command('create <name>').description('another organization with its own owner API key (printed once); its owner then runs it over the API'))
    .option('--environment <name>', 'environment tag inside new keys (rk.<environment>.…)')
    .action(async (name: string, options: StorageOptions & { environment?: string }, command: Command) => {
      const ctx = contextFor(command);
      const { createOrganizationInHome } = await import('../../server/bootstrap.js');
      const { home, env } = await serverEnv(options);
      const result = await createOrganizationInHome({ home, name, env, ...(options.environment === undefined ? {} : { environment: options.environment }) });
      ctx.output.result({ apiKey: result.apiKey, orgId: result.orgId, keyId: result.keyId, identityId: result.identityId }, () => {
        ctx.output.line(result.apiKey);
        ctx.output.hint(`organization ${result.orgId} ('${name}'), owner key ${result.keyId}. The key above is shown only this once: hand it to the organization's owner.`);
      });
    });
  storageOptions(org.command('list').description('every organization of the home'))
    .action(async (options: StorageOptions, command: Command) => {
      const ctx = contextFor(command);
      const { listOrganizationsInHome } = await import('../../server/bootstrap.js');
      const { home, env } = await serverEnv(options);
      const items = await listOrganizationsInHome(home, env);
      ctx.output.result({ items }, () => ctx.output.table(['ORG ID', 'NAME', 'CREATED'], items.map((o) => [o.orgId, o.name, o.createdAt])));
    });
}

export function registerMigrateStorageCommand(admin: Command): void {
  admin
    .command('migrate-storage')
    .description("move a home from SQLite + its object directory to Postgres + S3 (server stopped: refused while `strata serve` runs on the home; the target must be empty); verifies every row and object")
    .option('--home <dir>', HOME_HELP)
    .option('--config <file>', "the server's JSON config file: its databaseUrl/objectsUrl are the target")
    .option('--to-database <url>', 'postgres://… target (default: --config / STRATA_DATABASE_URL)')
    .option('--to-objects <url>', 's3://BUCKET?endpoint=… target (default: --config / STRATA_OBJECTS_URL)')
    .action(async (options: { home?: string; config?: string; toDatabase?: string; toObjects?: string }, command: Command) => {
      const ctx = contextFor(command);
      const { home, env } = await serverEnv({ ...options, ...(options.toDatabase === undefined ? {} : { database: options.toDatabase }), ...(options.toObjects === undefined ? {} : { objects: options.toObjects }) });
      const database = env['STRATA_DATABASE_URL'];
      const objects = env['STRATA_OBJECTS_URL'];
      if (!database || !objects) {
        const { CliError, EXIT } = await import('../errors.js');
        throw new CliError('USAGE', 'migrate-storage needs the target: --to-database postgres://… and --to-objects s3://… (or a --config naming them)', { exitCode: EXIT.usage });
      }
      const { migrateStorage } = await import('../../server/migrate-storage.js');
      let lastLine = 0;
      const report = await migrateStorage({
        home,
        env,
        to: { database, objects },
        onProgress: (event) => {
          // A line per phase step, at most every second: readable in a terminal and in a CI log.
          const now = Date.now();
          if (event.done !== event.total && now - lastLine < 1000) return;
          lastLine = now;
          ctx.output.hint(`migrate-storage: ${event.phase} ${event.done}/${event.total}`);
        },
      });
      const ok = report.verified && report.fsck.ok;
      ctx.output.result(report, () => {
        const rows = report.tables.reduce((sum, table) => sum + table.rows, 0);
        ctx.output.line(
          `migrate-storage: ${report.objects.total} objects (${report.objects.copied} copied, ${report.objects.alreadyThere} already there), ${rows} rows in ${report.tables.length} tables; ` +
            `rows compared: ${report.verified ? 'identical' : 'DIFFERENT'}; fsck of the target: ${report.fsck.ok ? 'ok' : `${report.fsck.missing.length} missing, ${report.fsck.corrupt.length} corrupt`}`,
        );
        if (ok) {
          ctx.output.hint(
            `now serve with --database and --objects (or the same --config) and STRATA_PEPPER_FILE=${report.pepperFile} on every replica (the keys verify only under this pepper); ${home}'s SQLite and store are left as they were`,
          );
        }
      });
      if (!ok) {
        const { EXIT } = await import('../errors.js');
        process.exitCode = EXIT.fsckProblems;
      }
    });
}
