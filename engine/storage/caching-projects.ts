// Project records remembered for a moment, for a server on Postgres. Every request that names a
// project reads its record (to authorize it, and for the engine: policy, dataset rules, retention);
// on Postgres that is a round trip per request, a fifth of a small write's (bench/server-storage.ts).
//
// What a remembered record can get wrong is bounded: projects are never deleted and never change
// organization, so existence and ownership are always right; only the settings can be older, and only
// after a change made through another process over the same database (another replica), which this
// one then sees within TTL_MS — the same bound as access changes (access/principal-cache.ts). A change
// made through this repository replaces the entry before it is acknowledged, with a generation
// counter so a read that started before the change cannot put the old record back. A project that
// is not found is never remembered (another replica may create it the next moment).
import type { MetadataRepository, ProjectRepository } from '../ports/metadata-repository.js';
import type { Clock } from '../ports/world.js';
import type { Project } from '../types.js';

export const PROJECT_TTL_MS = 2_000;
const MAX_ENTRIES = 10_000;

export function cachingProjects(repository: MetadataRepository, clock: Clock, ttlMs = PROJECT_TTL_MS): MetadataRepository {
  const inner = repository.projects;
  const entries = new Map<string, { project: Project; notAfter: number }>();
  let generation = 0;
  const remember = (project: Project) => {
    if (ttlMs <= 0) return;
    if (entries.size >= MAX_ENTRIES && !entries.has(project.projectId)) entries.delete(entries.keys().next().value as string); // oldest first
    entries.set(project.projectId, { project, notAfter: clock.now() + ttlMs });
  };
  const projects: ProjectRepository = {
    create: (project) => inner.create(project),
    list: (orgId) => inner.list(orgId),
    async get(projectId) {
      const hit = entries.get(projectId);
      if (hit !== undefined && hit.notAfter > clock.now()) return hit.project;
      const started = generation;
      const project = await inner.get(projectId);
      if (project !== null && generation === started) remember(project);
      return project;
    },
    async update(projectId, patch) {
      generation += 1;
      entries.delete(projectId);
      const project = await inner.update(projectId, patch);
      generation += 1;
      remember(project);
      return project;
    },
  };
  return { ...repository, projects, close: () => repository.close() };
}
