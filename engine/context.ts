import { createCommitBatcher, type CommitBatcher } from './commit-batcher.js';
import type { EngineDeps } from './engine-api.js';
import { StrataError } from './errors.js';
import { BlobIdCache } from './git/blob-id-cache.js';
import { DEFAULT_POLICY, mergePolicy } from './policy.js';
import type { ContentStore } from './ports/content-store.js';
import type { MetadataRepository } from './ports/metadata-repository.js';
import type { Clock, IdGenerator } from './ports/world.js';
import { createRetentionWorker, type RetentionWorker } from './retention-worker.js';
import { createRwLock, type RwLock } from './rw-lock.js';
import type { Actor, ContentHash, Project, VersionKind, VersionRecord, VersioningPolicy } from './types.js';

/** What every engine command receives: the injected world plus the engine's own coordination. */
export interface EngineContext {
  store: ContentStore;
  repository: MetadataRepository;
  clock: Clock;
  ids: IdGenerator;
  gcGraceMs: number;
  defaultPolicy: VersioningPolicy;
  /** content writes: shared; garbage collection: exclusive */
  gcLock: RwLock;
  batcher: CommitBatcher;
  retention: RetentionWorker;
  /** git blob ids of stored contents, so replaying a chain reads no content twice (git/blob-id-cache.ts) */
  gitBlobIds: BlobIdCache;
  now(): string;
  requireProject(projectId: string): Promise<Project>;
  newVersion(fields: {
    projectId: string;
    path: string;
    contentHash: ContentHash | null;
    size: number;
    actor: Actor;
    kind: VersionKind;
    restoredFrom?: string | null;
    executable?: boolean;
    /** a symbolic link (the content is its target): never executable, never a dataset */
    symlink?: boolean;
    dataset?: boolean;
  }): VersionRecord;
}

export function createEngineContext(deps: EngineDeps): EngineContext {
  const gcLock = createRwLock();
  const projects = cachedProjects(deps.repository.projects);
  const repository: MetadataRepository = { ...deps.repository, projects };
  const ctx: EngineContext = {
    store: deps.store,
    repository,
    clock: deps.clock,
    ids: deps.ids,
    gcGraceMs: deps.gcGraceMs ?? 10 * 60 * 1000,
    defaultPolicy: mergePolicy(DEFAULT_POLICY, deps.defaultPolicy),
    gcLock,
    batcher: createCommitBatcher(deps.repository, () => {}),
    retention: undefined as unknown as RetentionWorker,
    gitBlobIds: new BlobIdCache(),
    now: () => new Date(deps.clock.now()).toISOString(),
    async requireProject(projectId) {
      const project = typeof projectId === 'string' ? await projects.get(projectId) : null;
      if (!project) throw new StrataError('PROJECT_NOT_FOUND', { details: { projectId } });
      return project;
    },
    newVersion(fields) {
      const symlink = fields.contentHash !== null && fields.symlink === true;
      if (symlink && fields.dataset === true) throw new TypeError('a symbolic link is never a dataset');
      return {
        versionId: deps.ids.uuid(),
        projectId: fields.projectId,
        path: fields.path,
        contentHash: fields.contentHash,
        size: fields.size,
        actor: fields.actor,
        timestamp: ctx.now(),
        kind: fields.kind,
        restoredFrom: fields.restoredFrom ?? null,
        // A tombstone has no content, so no mode either; a link has no exec bit of its own (lstat
        // says 0777 for every link; chmod follows it to the target).
        executable: fields.contentHash !== null && fields.executable === true && !symlink,
        symlink,
        dataset: fields.contentHash !== null && fields.dataset === true,
      };
    },
  };
  ctx.retention = createRetentionWorker(ctx);
  return ctx;
}

/** How long a project's settings are reused without asking the repository again. */
const PROJECT_CACHE_MS = 1000;

/**
 * Every write reads its project (policy, dataset rules, retention): a repository read that showed as
 * 6% of the main thread at 5,000 small writes/s. Projects change rarely, and every change made
 * through this engine goes through `update`, which refreshes the cached copy; a change made by
 * another process (two engines on one SQLite home) shows here within PROJECT_CACHE_MS.
 */
function cachedProjects(projects: MetadataRepository['projects']): MetadataRepository['projects'] {
  const cache = new Map<string, { project: Project; at: number }>();
  return {
    ...projects,
    async get(projectId) {
      const hit = cache.get(projectId);
      if (hit !== undefined && performance.now() - hit.at < PROJECT_CACHE_MS) return hit.project;
      const project = await projects.get(projectId);
      if (project === null) cache.delete(projectId);
      else cache.set(projectId, { project, at: performance.now() });
      return project;
    },
    async update(projectId, patch) {
      cache.delete(projectId);
      try {
        const project = await projects.update(projectId, patch);
        cache.set(projectId, { project, at: performance.now() });
        return project;
      } catch (error) {
        cache.delete(projectId);
        throw error;
      }
    },
  };
}
