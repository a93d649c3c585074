import type { Command } from 'commander';
import type { RetentionSetting } from '../../engine/types.js';
import { contextFor, parseCount } from '../context.js';
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
    .description('keep at most N versions per path (0 = unlimited)')
    .argument('<n>', 'versions to keep per path, 0 = unlimited')
    .action(async (n: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const maxVersions = parseCount(n, 'N')!;
      const setting = await ctx
        .client()
        .json<RetentionSetting>('POST', ctx.projectPath('/fs/retention'), { json: { maxVersions } });
      ctx.output.result(setting, () => ctx.output.line(`retention: ${retentionText(setting.maxVersions)}`));
    });
}
