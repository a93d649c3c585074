import type { Command } from 'commander';
import type { WriteResult } from '../../engine/engine-api.js';
import { isVersioned } from '../../engine/policy.js';
import type { VersioningPolicy, VersionRecord } from '../../engine/types.js';
import { historyNotKept } from './policy.js';
import { shortId } from '../../engine/short-ids.js';
import { contextFor, parseCount } from '../context.js';
import { formatBytes, formatTime, sanitizeLine } from '../output.js';
import { usageError } from '../errors.js';
import { type FollowedVersion, followHistory } from '../follow-history.js';
import { collectPages } from '../pages.js';

const DEFAULT_LIMIT = 50;

export function registerHistoryCommands(program: Command): void {
  program
    .command('history')
    .description('list versions, newest first: of PATH, or of the whole project')
    .argument('[path]', 'project path (omit for every path)')
    .option('--limit <n>', `show at most N versions (default ${DEFAULT_LIMIT})`)
    .option('--all', 'show every version (follows all pages)')
    .option('--follow', "PATH's history across renames: then the versions it had under its earlier names")
    .action(async (pathArg: string | undefined, options: { limit?: string; all?: boolean; follow?: boolean }, command: Command) => {
      const ctx = contextFor(command);
      const path = pathArg === undefined ? undefined : ctx.filePath(pathArg);
      const limit = options.all ? 'all' : (parseCount(options.limit, '--limit', { min: 1 }) ?? DEFAULT_LIMIT);
      if (options.follow === true && path === undefined) throw usageError('--follow needs a PATH', { field: 'follow' });
      let page: { items: FollowedVersion[]; nextCursor?: string; more?: boolean };
      if (options.follow === true && path !== undefined) {
        const followed = await followHistory(ctx.client(), (suffix) => ctx.projectPath(suffix), path, limit);
        page = { items: followed.items, more: followed.more };
      } else {
        page = await collectPages<VersionRecord>(ctx.client(), ctx.projectPath('/history'), { path }, limit);
      }
      const current = page.items[0];
      if (path !== undefined && current !== undefined && current.contentHash !== null) {
        // A history of one that will stay one: say why, instead of letting it look complete.
        const policy = await ctx.client().json<VersioningPolicy>('GET', ctx.projectPath('/policy'));
        if (!isVersioned(policy, current.path, current.size)) ctx.output.warn(historyNotKept(current.path, current.size));
      }
      ctx.output.result(page, () => {
        if (page.items.length === 0) {
          ctx.output.hint(path ? `no history for ${path}` : 'no history yet');
          return;
        }
        ctx.output.table(
          ['TIME', 'KIND', 'TYPE', 'SIZE', 'ACTOR', 'VERSION', 'PATH'],
          page.items.map((v) => [
            formatTime(v.timestamp),
            v.renamedFrom === undefined ? v.kind : 'rename',
            // a symbolic link is its own type: its content (and size) is the link's target; a dataset's
            // versions point to its manifest, and its size is the assembled file's
            v.contentHash === null ? '-' : v.symlink ? 'link' : v.dataset ? 'dataset' : 'file',
            v.contentHash === null ? '-' : formatBytes(v.size),
            v.actor?.name ?? '',
            // the last 10 hex digits, as the web UI shows them: `strata restore` takes them (--json has whole ids)
            shortId(v.versionId),
            v.renamedFrom === undefined ? v.path : `${v.path} (from ${v.renamedFrom})`,
          ]),
          { rightAlign: [3] },
        );
        if (page.nextCursor || page.more) ctx.output.hint(`(more versions: --limit N or --all)`);
      });
    });

  program
    .command('restore')
    .description("make an old version the path's current content again (recorded as a new version)")
    .argument('<versionId>', 'a version id from `strata history` (its last 6+ digits, or a unique prefix, will do)')
    .action(async (versionId: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const result = await ctx.client().json<WriteResult>('POST', ctx.projectPath('/history/restore'), {
        json: { versionId },
      });
      ctx.output.result(result, () => {
        ctx.output.line(
          `restored ${sanitizeLine(result.version.path)} from ${result.version.restoredFrom ?? versionId}: new version ${result.version.versionId}`,
        );
      });
    });
}
