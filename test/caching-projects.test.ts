// Project records remembered for a moment on a server on Postgres (engine/storage/caching-projects.ts):
// two "replicas" (two repositories, each its own pool) over one schema, one clock the test moves.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MetadataRepository } from '../engine/ports/metadata-repository.js';
import { cachingProjects, PROJECT_TTL_MS } from '../engine/storage/caching-projects.js';
import { openPgRepository, type PgRepository } from '../engine/storage/pg-repository.js';
import type { Project } from '../engine/types.js';
import { at, ORG, PROJECT, uuidFor } from './conformance/metadata-repository-fixtures.js';
import { type FrozenClock, frozenClock } from './helpers/clock.js';
import { createTestSchema, type TestSchema } from './helpers/postgres.js';

const project: Project = {
  projectId: PROJECT,
  orgId: ORG,
  name: 'thesis',
  createdAt: at(1),
  policy: { alwaysExtensions: ['.m'], sizeThreshold: 52_428_800, largeFileAllowlist: [] },
  retention: { maxVersions: 0 },
  datasets: { tracked: [], thresholdBytes: 67_108_864 },
};

describe('cached project records', () => {
  let schema: TestSchema;
  let here: PgRepository;
  let other: PgRepository;
  let clock: FrozenClock;
  let cached: MetadataRepository;

  beforeEach(async () => {
    schema = await createTestSchema('strata_projcache');
    here = await openPgRepository({ url: schema.url, max: 2 });
    other = await openPgRepository({ url: schema.url, max: 2 });
    clock = frozenClock();
    cached = cachingProjects(here, clock);
    await here.projects.create(project);
  });
  afterEach(async () => {
    await here?.close();
    await other?.close();
    await schema?.drop();
  });

  it('a change through this process is seen at once; one through another replica within the TTL', async () => {
    expect((await cached.projects.get(PROJECT))!.retention.maxVersions).toBe(0);
    await cached.projects.update(PROJECT, { retention: { maxVersions: 5 } });
    expect((await cached.projects.get(PROJECT))!.retention.maxVersions).toBe(5);

    await other.projects.update(PROJECT, { retention: { maxVersions: 9 } });
    expect((await cached.projects.get(PROJECT))!.retention.maxVersions).toBe(5);
    clock.advance(PROJECT_TTL_MS);
    expect((await cached.projects.get(PROJECT))!.retention.maxVersions).toBe(9);
  });

  it('a project not found is not remembered: created by another replica, it is found the next moment', async () => {
    const later = { ...project, projectId: uuidFor(7, 0xa), name: 'later' };
    expect(await cached.projects.get(later.projectId)).toBeNull();
    await other.projects.create(later);
    expect((await cached.projects.get(later.projectId))!.name).toBe('later');
  });

  it('a read that started before a change cannot put the old record back', async () => {
    // The inner read is held until the update through the cache has finished.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const slow: MetadataRepository = {
      ...here,
      projects: {
        ...here.projects,
        get: async (id) => {
          const read = await here.projects.get(id);
          await held;
          return read;
        },
      },
    };
    const racing = cachingProjects(slow, clock);
    const stale = racing.projects.get(PROJECT);
    await racing.projects.update(PROJECT, { name: 'renamed' });
    release();
    expect((await stale)!.name).toBe('thesis');
    expect((await racing.projects.get(PROJECT))!.name).toBe('renamed');
  });
});
