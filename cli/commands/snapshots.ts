import type { Command } from 'commander';
import type { SnapshotRestoreResult } from '../../engine/engine-api.js';
import type { DiffItem, Snapshot, SnapshotEntry } from '../../engine/types.js';
import { shortId } from '../../engine/short-ids.js';
import { contextFor, parseCount } from '../context.js';
import { formatBytes, formatTime, plural, sanitizeLine } from '../output.js';
import { collectPages } from '../pages.js';

const DEFAULT_LIMIT = 50;

export function registerSnapshotCommands(program: Command): void {
  const snapshot = program.command('snapshot').alias('snapshots').description('whole-project snapshots');
  const snapshotPath = (ctx: ReturnType<typeof contextFor>, idOrTag: string, suffix = '') =>
    ctx.projectPath(`/fs/snapshots/${encodeURIComponent(idOrTag)}${suffix}`);

  snapshot
    .command('create')
    .description('pin every current file into a new snapshot')
    .option('-m, --message <message>', 'what this snapshot is')
    .action(async (options: { message?: string }, command: Command) => {
      const ctx = contextFor(command);
      const body = options.message === undefined ? {} : { message: options.message };
      const created = await ctx.client().json<Snapshot>('POST', ctx.projectPath('/fs/snapshots'), { json: body });
      ctx.output.result(created, () => {
        ctx.output.line(
          `snapshot ${created.seq} ${created.snapshotId}: ${plural(created.fileCount, 'file')}, ${formatBytes(created.totalSize)}`,
        );
      });
    });

  snapshot
    .command('list')
    .description('list snapshots, newest first')
    .option('--limit <n>', `show at most N snapshots (default ${DEFAULT_LIMIT})`)
    .option('--all', 'show every snapshot')
    .action(async (options: { limit?: string; all?: boolean }, command: Command) => {
      const ctx = contextFor(command);
      const limit = options.all ? 'all' : (parseCount(options.limit, '--limit', { min: 1 }) ?? DEFAULT_LIMIT);
      const page = await collectPages<Snapshot>(ctx.client(), ctx.projectPath('/fs/snapshots'), {}, limit);
      ctx.output.result(page, () => {
        if (page.items.length === 0) {
          ctx.output.hint('no snapshots yet: strata snapshot create -m MESSAGE');
          return;
        }
        ctx.output.table(
          ['SEQ', 'TIME', 'FILES', 'SIZE', 'SNAPSHOT', 'TAGS', 'MESSAGE'],
          page.items.map((s) => [
            s.seq,
            formatTime(s.timestamp),
            s.fileCount,
            formatBytes(s.totalSize),
            shortId(s.snapshotId),
            s.tags.join(','),
            s.message,
          ]),
          { rightAlign: [0, 2, 3] },
        );
        if (page.nextCursor) ctx.output.hint('(more snapshots: --limit N or --all)');
      });
    });

  snapshot
    .command('show')
    .description('show a snapshot and the files it pins')
    .argument('<snapshot>', 'snapshot id, tag, number (SEQ) or short id')
    .action(async (idOrTag: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const client = ctx.client();
      const found = await client.json<Snapshot>('GET', snapshotPath(ctx, idOrTag));
      const entries = await collectPages<SnapshotEntry>(client, snapshotPath(ctx, found.snapshotId, '/entries'), {}, 'all');
      ctx.output.result({ snapshot: found, entries: entries.items }, () => {
        ctx.output.line(`snapshot ${found.seq} ${found.snapshotId}`);
        ctx.output.line(`  time     ${formatTime(found.timestamp)}`);
        ctx.output.line(`  by       ${sanitizeLine(found.actor?.name ?? '')}`);
        ctx.output.line(`  parent   ${found.parentId ?? '(none)'}`);
        ctx.output.line(`  tags     ${found.tags.join(', ') || '(none)'}`);
        ctx.output.line(`  message  ${sanitizeLine(found.message)}`);
        ctx.output.line(`  files    ${found.fileCount}, ${formatBytes(found.totalSize)}`);
        if (entries.items.length > 0) {
          ctx.output.line('');
          ctx.output.table(
            ['SIZE', 'VERSION', 'PATH'],
            entries.items.map((e) => [e.symlink ? 'link' : formatBytes(e.size), shortId(e.versionId), e.path]),
            { rightAlign: [0] },
          );
        }
      });
    });

  snapshot
    .command('diff')
    .description('what changed from snapshot FROM to snapshot TO (default: the current files)')
    .argument('<from>', 'snapshot id, tag, number (SEQ) or short id')
    .argument('[to]', 'snapshot id, tag, number (SEQ) or short id')
    .action(async (from: string, to: string | undefined, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const diff = await ctx
        .client()
        .json<{ from: unknown; to: unknown; items: DiffItem[] }>('GET', snapshotPath(ctx, from, '/diff'), { query: { to } });
      ctx.output.result(diff, () => {
        if (diff.items.length === 0) {
          ctx.output.hint('no changes');
          return;
        }
        const mark = { added: 'A', removed: 'D', modified: 'M' } as const;
        ctx.output.table(
          ['', 'BEFORE', 'AFTER', 'PATH'],
          diff.items.map((d) => [
            mark[d.change] ?? d.change,
            // a link shows as `link`: a file turned into a link with the same bytes is still a change
            d.before ? (d.before.symlink ? 'link' : formatBytes(d.before.size)) : '-',
            d.after ? (d.after.symlink ? 'link' : formatBytes(d.after.size)) : '-',
            d.path,
          ]),
          { rightAlign: [1, 2] },
        );
      });
    });

  snapshot
    .command('restore')
    .description("make the project's files what they were in a snapshot (recorded as new versions; nothing is lost); directories are not part of snapshots")
    .argument('<snapshot>', 'snapshot id, tag, number (SEQ) or short id')
    .action(async (idOrTag: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const result = await ctx.client().json<SnapshotRestoreResult>('POST', snapshotPath(ctx, idOrTag, '/restore'));
      ctx.output.result(result, () => {
        ctx.output.line(
          `restored snapshot ${result.snapshot.seq} ${result.snapshot.snapshotId}: ${plural(result.changed, 'path')} changed`,
        );
      });
    });
}
