import type { EngineContext } from '../context.js';
import { StrataError } from '../errors.js';
import { unsafeCharacterReason } from '../unsafe-text.js';
import { DEFAULT_DATASET_RULES } from '../datasets/rules.js';
import { mergePolicy } from '../policy.js';
import type { Project, VersioningPolicy } from '../types.js';

const NAME = /^[^/\\]{1,200}$/;

export function validateProjectName(name: unknown): string {
  if (typeof name !== 'string' || !NAME.test(name) || name.trim() !== name || unsafeCharacterReason(name) !== null) {
    throw new StrataError('INVALID_ARGUMENT', { message: 'name must be 1–200 characters, no slashes, control or invisible formatting characters, no surrounding spaces', details: { field: 'name' } });
  }
  return name;
}

export async function createProject(ctx: EngineContext, input: { orgId: string; name: string; policy?: Partial<VersioningPolicy> }): Promise<Project> {
  const project: Project = {
    projectId: ctx.ids.uuid(),
    orgId: input.orgId,
    name: validateProjectName(input.name),
    createdAt: ctx.now(),
    policy: mergePolicy(ctx.defaultPolicy, input.policy),
    retention: { maxVersions: 0 },
    datasets: { ...DEFAULT_DATASET_RULES, tracked: [...DEFAULT_DATASET_RULES.tracked] },
  };
  if (!(await ctx.repository.access.getOrganization(input.orgId))) {
    throw new StrataError('ORG_NOT_FOUND', { details: { orgId: input.orgId } });
  }
  await ctx.repository.projects.create(project);
  return project;
}

export async function updatePolicy(ctx: EngineContext, input: { projectId: string; policy: Partial<VersioningPolicy> }): Promise<Project> {
  const project = await ctx.requireProject(input.projectId);
  return ctx.repository.projects.update(project.projectId, { policy: mergePolicy(project.policy, input.policy) });
}
