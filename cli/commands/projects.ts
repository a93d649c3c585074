import type { Command } from 'commander';
import type { Project } from '../../engine/types.js';
import { contextFor } from '../context.js';
import { formatBytes, formatTime, sanitizeLine } from '../output.js';

export function registerProjectCommands(program: Command): void {
  const project = program.command('project').alias('projects').description('create and list projects');

  project
    .command('create')
    .description('create a project in your organization')
    .argument('<name>', 'project name')
    .action(async (name: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const created = await ctx.client().json<Project>('POST', '/v1/projects', { json: { name } });
      ctx.output.result(created, () => {
        ctx.output.line(`created project ${sanitizeLine(created.name)} (${created.projectId})`);
        ctx.output.hint(`use it with: export STRATA_PROJECT_ID=${created.projectId}`);
      });
    });

  project
    .command('list')
    .description('list the projects you can see')
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const page = await ctx.client().json<{ items: Project[] }>('GET', '/v1/projects');
      ctx.output.result(page, () => {
        if (page.items.length === 0) {
          ctx.output.hint('no projects yet: strata project create NAME');
          return;
        }
        ctx.output.table(
          ['PROJECT ID', 'NAME', 'CREATED', 'RETENTION'],
          page.items.map((p) => [p.projectId, p.name, formatTime(p.createdAt), retentionText(p.retention?.maxVersions)]),
        );
      });
    });

  project
    .command('show')
    .description('show a project and its versioning policy (default: the configured project)')
    .argument('[projectId]', 'project id')
    .action(async (projectId: string | undefined, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const id = projectId ?? ctx.projectId();
      const p = await ctx.client().json<Project>('GET', `/v1/projects/${encodeURIComponent(id)}`);
      ctx.output.result(p, () => {
        ctx.output.table(
          ['FIELD', 'VALUE'],
          [
            ['projectId', p.projectId],
            ['name', p.name],
            ['orgId', p.orgId],
            ['created', formatTime(p.createdAt)],
            ['retention', retentionText(p.retention?.maxVersions)],
            ['always versioned', p.policy?.alwaysExtensions?.join(' ') ?? ''],
            ['size threshold', p.policy ? formatBytes(p.policy.sizeThreshold) : ''],
            ['large-file allowlist', p.policy?.largeFileAllowlist?.join(' ') ?? ''],
          ],
        );
      });
    });
}

export function retentionText(maxVersions: number | undefined): string {
  if (maxVersions === undefined) return '';
  return maxVersions === 0 ? 'unlimited' : `${maxVersions} versions/path`;
}
