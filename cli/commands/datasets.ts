import type { Command } from 'commander';
import type { DatasetInfo, DatasetVersionInfo } from '../../engine/engine-api.js';
import type { DatasetRules, Entry, Page, VersionRecord } from '../../engine/types.js';
import { shortId } from '../../engine/short-ids.js';
import { contextFor, parseCount } from '../context.js';
import { formatBytes, formatTime, plural } from '../output.js';

function rulesText(rules: DatasetRules): string {
  const tracked = rules.tracked.length === 0 ? 'none' : rules.tracked.join(', ');
  return `tracked: ${tracked}\nthreshold: files larger than ${formatBytes(rules.thresholdBytes)} are datasets`;
}

export function registerDatasetCommands(program: Command): void {
  const dataset = program
    .command('dataset')
    .description('large files stored as content-defined shards behind a versioned manifest (an edit stores only the changed shards)');

  dataset
    .command('track')
    .description('store PATTERN (a project path or glob, e.g. "data/**/*.h5") as datasets; matching files become datasets now')
    .argument('<pattern>', 'project-relative path or glob')
    .action(async (patternArg: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const pattern = ctx.filePath(patternArg);
      const result = await ctx
        .client()
        .json<{ rules: DatasetRules; converted: VersionRecord[] }>('POST', ctx.projectPath('/fs/datasets/track'), { json: { pattern } });
      ctx.output.result(result, () => {
        ctx.output.line(`tracking ${pattern}`);
        if (result.converted.length > 0) ctx.output.line(`converted ${plural(result.converted.length, 'file')}: ${result.converted.map((v) => v.path).join(', ')}`);
        ctx.output.line(rulesText(result.rules));
      });
    });

  dataset
    .command('untrack')
    .description('stop tracking PATTERN (existing dataset versions stay datasets; later writes follow the rules)')
    .argument('<pattern>', 'a pattern given to `dataset track`')
    .action(async (patternArg: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const pattern = ctx.filePath(patternArg);
      const result = await ctx.client().json<{ rules: DatasetRules }>('POST', ctx.projectPath('/fs/datasets/untrack'), { json: { pattern } });
      ctx.output.result(result, () => ctx.output.line(`no longer tracking ${pattern}\n${rulesText(result.rules)}`));
    });

  dataset
    .command('threshold')
    .description('files larger than BYTES are datasets (default 64 MiB; 0 = every file)')
    .argument('<bytes>', 'size in bytes')
    .action(async (bytes: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const thresholdBytes = parseCount(bytes, 'BYTES', { max: Number.MAX_SAFE_INTEGER })!;
      const result = await ctx.client().json<{ rules: DatasetRules }>('POST', ctx.projectPath('/fs/datasets/threshold'), { json: { thresholdBytes } });
      ctx.output.result(result, () => ctx.output.line(rulesText(result.rules)));
    });

  dataset
    .command('ls')
    .description('the dataset rules and the datasets of the current tree')
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const result = await ctx.client().json<{ rules: DatasetRules; items: Entry[] }>('GET', ctx.projectPath('/fs/datasets'));
      ctx.output.result(result, () => {
        ctx.output.line(rulesText(result.rules));
        if (result.items.length === 0) {
          ctx.output.hint('no datasets in the current tree');
          return;
        }
        ctx.output.table(
          ['SIZE', 'MODIFIED', 'VERSION', 'PATH'],
          result.items.map((e) => [formatBytes(e.size), formatTime(e.timestamp), shortId(e.versionId), e.path]),
          { rightAlign: [0] },
        );
      });
    });

  dataset
    .command('show')
    .description("a dataset's manifest (shards, sizes, chunker) and its manifest history")
    .argument('<path>', 'project path of the dataset')
    .option('--version <id>', 'the manifest of this version instead of the current one')
    .option('--shards', 'list every shard')
    .action(async (pathArg: string, options: { version?: string; shards?: boolean }, command: Command) => {
      const ctx = contextFor(command);
      const path = ctx.filePath(pathArg);
      const client = ctx.client();
      const info = await client.json<DatasetInfo>('GET', ctx.projectPath('/fs/dataset/manifest'), {
        query: options.version === undefined ? { path } : { path, versionId: options.version },
      });
      const history = await client.json<Page<DatasetVersionInfo>>('GET', ctx.projectPath('/fs/dataset/history'), { query: { path, limit: '20' } });
      ctx.output.result({ ...info, history: history.items }, () => {
        const m = info.manifest;
        const distinct = new Set(m.shards.map((s) => s.hash)).size;
        ctx.output.line(`${path}: ${formatBytes(m.size)} in ${plural(m.shards.length, 'shard')} (${distinct} distinct), ${m.hash}`);
        ctx.output.line(`chunker: ${m.chunker.algorithm} min ${formatBytes(m.chunker.minSize)} / avg ${formatBytes(m.chunker.avgSize)} / max ${formatBytes(m.chunker.maxSize)}`);
        ctx.output.line(`version ${info.version.versionId}, manifest ${info.manifestHash}`);
        if (options.shards) {
          let offset = 0;
          ctx.output.table(
            ['OFFSET', 'SIZE', 'SHARD'],
            m.shards.map((s) => {
              const row = [offset, s.size, s.hash];
              offset += s.size;
              return row;
            }),
            { rightAlign: [0, 1] },
          );
        }
        ctx.output.table(
          ['TIME', 'SIZE', 'SHARDS', 'NEW', 'VERSION'],
          history.items.map((h) => [
            formatTime(h.version.timestamp),
            h.version.contentHash === null ? 'deleted' : formatBytes(h.version.size),
            h.shardCount === null ? (h.version.contentHash === null ? '-' : 'plain file') : h.shardCount,
            h.newShards ?? '-',
            shortId(h.version.versionId),
          ]),
          { rightAlign: [1, 2, 3] },
        );
      });
    });
}
