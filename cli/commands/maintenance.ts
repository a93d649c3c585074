import type { Command } from 'commander';
import type { Engine, FsckReport, GcReport } from '../../engine/engine-api.js';
import { type CommandContext, contextFor } from '../context.js';
import { EXIT } from '../errors.js';
import { formatBytes, plural } from '../output.js';

// fsck and gc run in-process against a home directory when asked to (--home) or when no server is
// configured at all (the single-workstation case); otherwise they ask the server (admin routes).
// Running in-process next to a live server on the same home is safe: SQLite WAL serializes writers
// and gc keeps objects younger than its grace period (writes in flight).

// A server home on Postgres and S3 is named as `strata serve` names it: --config, or the storage URLs
// in the environment (STRATA_DATABASE_URL, STRATA_OBJECTS_URL).

interface HomeOptions {
  home?: string;
  config?: string;
}

function runsLocally(ctx: CommandContext, options: HomeOptions): boolean {
  return options.home !== undefined || options.config !== undefined || ctx.target().serverUrlSource === 'default';
}

async function withLocalEngine<T>(options: HomeOptions, fn: (engine: Engine) => Promise<T>): Promise<T> {
  const { resolveHome } = await import('../../server/home.js');
  const { serveEnvironment } = await import('../../server/serve-config.js');
  const { openServerEngine } = await import('../../server/server-storage.js');
  const { storageUrls } = await import('../../server/server-storage.js');
  const { withHomeClaim } = await import('../../server/home-claim.js');
  const env = serveEnvironment(options.config);
  const home = resolveHome(options.home, env);
  const run = async () => {
    // Never migrates: on storage without Strata's data fsck would report an empty database clean (and
    // gc collect nothing) after creating tables in it; it refuses with NO_STRATA_DATA instead.
    const local = await openServerEngine(home, env, { migrate: false });
    try {
      return await fn(local.engine);
    } finally {
      await local.close();
    }
  };
  // A home's SQLite is used from one host at a time (home-claim.ts); Postgres needs no such care.
  return storageUrls(env).database === undefined ? withHomeClaim(home, 'strata fsck/gc', run, { existingOnly: true }) : run();
}

export function registerMaintenanceCommands(program: Command): void {
  program
    .command('fsck')
    .description('verify every stored object against its hash and every reference (exit 8 on problems)')
    .option('--home <dir>', 'check this Strata home in-process (default: $STRATA_HOME when no server is configured)')
    .option('--config <file>', "check in-process the storage a server's config file names (Postgres, S3)")
    .action(async (options: HomeOptions, command: Command) => {
      const ctx = contextFor(command);
      const report = runsLocally(ctx, options)
        ? await withLocalEngine(options, (engine) => engine.fsck())
        : await ctx.client().json<FsckReport>('POST', '/v1/admin/fsck');
      ctx.output.result(report, () => {
        ctx.output.line(
          `fsck: ${plural(report.objectsChecked, 'object')} and ${plural(report.referencesChecked, 'reference')} checked: ` +
            (report.ok ? 'ok' : `${report.missing.length} missing, ${report.corrupt.length} corrupt`),
        );
        for (const m of report.missing) ctx.output.line(`  missing ${m.hash}${m.referencedBy ? ` (referenced by ${m.referencedBy})` : ''}`);
        for (const c of report.corrupt) ctx.output.line(`  corrupt ${c}`);
      });
      if (!report.ok) {
        // The report itself is the output (already printed); only the exit code says "problems".
        process.exitCode = EXIT.fsckProblems;
      }
    });

  program
    .command('gc')
    .description('delete stored content that no version references any more')
    .option('--home <dir>', 'collect this Strata home in-process (default: $STRATA_HOME when no server is configured)')
    .option('--config <file>', "collect in-process the storage a server's config file names (Postgres, S3)")
    .action(async (options: HomeOptions, command: Command) => {
      const ctx = contextFor(command);
      const report = runsLocally(ctx, options)
        ? await withLocalEngine(options, (engine) => engine.gc())
        : await ctx.client().json<GcReport>('POST', '/v1/admin/gc');
      ctx.output.result(report, () => {
        // bytesFreed is the deleted content's size: the disk gets back about that for large files, while
        // small ones leave room inside the store's database that it reuses (df does not show it).
        ctx.output.line(
          `gc: ${plural(report.objectsScanned, 'object')} scanned, ${report.objectsDeleted} deleted, ${formatBytes(report.bytesFreed)} of content freed`,
        );
        // A server older than this CLI does not report what it kept.
        if ((report.objectsKept ?? 0) > 0) {
          ctx.output.line(
            `  ${plural(report.objectsKept, 'unreferenced object')} (${formatBytes(report.bytesKept)}) kept: younger than the ${formatGrace(report.graceMs)} grace period; ` +
              'run gc again after it',
          );
        }
      });
    });
}

function formatGrace(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}-minute` : `${Math.round(ms / 1000)}-second`;
}
