import type { Command } from 'commander';
import type { RetentionChange, RetentionPreview } from '../../engine/commands/retention.js';
import type { RetentionSetting } from '../../engine/types.js';
import { contextFor, parseCount } from '../context.js';
import { formatBytes, plural } from '../output.js';
import { retentionText } from './projects.js';

export function registerRetentionCommands(program: Command): void {
  const retention = program
    .command('retention')
    .description('how many versions of each path to keep (snapshots and current versions are always kept)');

  retention
    .command('get')
    .description('show the setting')
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const setting = await ctx.client().json<RetentionSetting>('GET', ctx.projectPath('/fs/retention'));
      ctx.output.result(setting, () => ctx.output.line(`retention: ${retentionText(setting.maxVersions)}`));
    });

  retention
    .command('set')
    .description('keep at most N versions per path (0 = unlimited); prunes older versions at once')
    .argument('<n>', 'versions to keep per path, 0 = unlimited')
    .option('--dry-run', 'say what N would prune now (versions, bytes, the paths with most), changing nothing')
    .action(async (n: string, options: { dryRun?: boolean }, command: Command) => {
      const ctx = contextFor(command);
      const maxVersions = parseCount(n, 'N')!;
      const client = ctx.client();
      if (options.dryRun === true) {
        const preview = await client.json<RetentionPreview>('POST', ctx.projectPath('/fs/retention'), { json: { maxVersions, dryRun: true } });
        ctx.output.result(preview, () => {
          const { pruned } = preview;
          const setting = `retention ${retentionText(maxVersions)} (now: ${retentionText(preview.currentMaxVersions)})`;
          if (pruned.versions === 0) {
            ctx.output.line(`${setting} would prune nothing`);
            return;
          }
          ctx.output.line(`${setting} would prune ${plural(pruned.versions, 'version')} (${formatBytes(pruned.bytes)}) of ${plural(pruned.pathCount, 'path')}; nothing was changed`);
          ctx.output.table(
            ['VERSIONS', 'SIZE', 'PATH'],
            pruned.paths.map((p) => [p.versions, formatBytes(p.bytes), p.path]),
            { rightAlign: [0, 1] },
          );
          if (pruned.pathCount > pruned.paths.length) ctx.output.hint(`(and ${plural(pruned.pathCount - pruned.paths.length, 'more path')})`);
        });
        return;
      }
      const change = await client.json<RetentionChange>('POST', ctx.projectPath('/fs/retention'), { json: { maxVersions } });
      ctx.output.result(change, () => {
        const pruned = change.pruned.versions === 0 ? 'nothing pruned' : `pruned ${plural(change.pruned.versions, 'version')} (${formatBytes(change.pruned.bytes)})`;
        ctx.output.line(`retention: ${retentionText(change.maxVersions)}; ${pruned}`);
      });
    });
}
