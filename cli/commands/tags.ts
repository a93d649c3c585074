import type { Command } from 'commander';
import { shortId } from '../../engine/short-ids.js';
import { contextFor } from '../context.js';

interface Tag {
  tag: string;
  snapshotId: string;
}

export function registerTagCommands(program: Command): void {
  const tag = program.command('tag').alias('tags').description('name snapshots (tags are unique per project)');

  tag
    .command('add')
    .description('tag a snapshot')
    .argument('<snapshot>', 'snapshot id or existing tag')
    .argument('<tag>', 'new tag, e.g. submitted-v1')
    .action(async (snapshot: string, name: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const created = await ctx
        .client()
        .json<Tag>('POST', ctx.projectPath(`/fs/snapshots/${encodeURIComponent(snapshot)}/tags`), { json: { tag: name } });
      ctx.output.result(created, () => ctx.output.line(`tagged ${created.snapshotId} as ${created.tag}`));
    });

  tag
    .command('list')
    .description('list tags')
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const page = await ctx.client().json<{ items: Tag[] }>('GET', ctx.projectPath('/fs/tags'));
      ctx.output.result(page, () => {
        if (page.items.length === 0) {
          ctx.output.hint('no tags yet: strata tag add SNAPSHOT TAG');
          return;
        }
        ctx.output.table(
          ['TAG', 'SNAPSHOT'],
          page.items.map((t) => [t.tag, shortId(t.snapshotId)]),
        );
      });
    });

  tag
    .command('rm')
    .description('remove a tag (the snapshot stays)')
    .argument('<tag>', 'tag name')
    .action(async (name: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      await ctx.client().json<undefined>('DELETE', ctx.projectPath(`/fs/tags/${encodeURIComponent(name)}`));
      ctx.output.result({ tag: name, removed: true }, () => ctx.output.line(`removed tag ${name}`));
    });
}
