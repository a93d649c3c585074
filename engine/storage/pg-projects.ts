import { StrataError } from '../errors.js';
import type { ProjectRepository } from '../ports/metadata-repository.js';
import type { Project } from '../types.js';
import { type PgDatabase, prepared } from './pg-db.js';
import { type ProjectRow, toProject } from './sqlite-projects.js';

/** Every request that names a project reads it (authorization, then the engine). */
const GET_PROJECT = prepared('SELECT project_id, org_id, name, created_at, policy, max_versions, datasets FROM projects WHERE project_id = $1');

export function createPgProjects(db: PgDatabase): ProjectRepository {
  const get = async (projectId: string): Promise<Project | null> => {
    const row = await db.one<ProjectRow>(GET_PROJECT, [projectId]);
    return row === undefined ? null : toProject(row);
  };
  return {
    create: async (project) => {
      await db.query(
        'INSERT INTO projects (project_id, org_id, name, created_at, policy, max_versions, datasets) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [project.projectId, project.orgId, project.name, project.createdAt, JSON.stringify(project.policy), project.retention.maxVersions, JSON.stringify(project.datasets)],
      );
    },
    get,
    list: async (orgId) => (await db.query<ProjectRow>('SELECT * FROM projects WHERE org_id = $1 ORDER BY name, project_id', [orgId])).map(toProject),
    update: (projectId, patch) =>
      db.tx(
        async (tx) => {
          const row = await tx.one<ProjectRow>('SELECT * FROM projects WHERE project_id = $1', [projectId]);
          if (row === undefined) throw new StrataError('PROJECT_NOT_FOUND', { details: { projectId } });
          const current = toProject(row);
          const next: Project = {
            ...current,
            name: patch.name ?? current.name,
            policy: patch.policy ?? current.policy,
            retention: patch.retention ?? current.retention,
            datasets: patch.datasets ?? current.datasets,
          };
          await tx.query('UPDATE projects SET name = $1, policy = $2, max_versions = $3, datasets = $4 WHERE project_id = $5', [
            next.name,
            JSON.stringify(next.policy),
            next.retention.maxVersions,
            JSON.stringify(next.datasets),
            projectId,
          ]);
          return next;
        },
        { projects: [projectId] },
      ),
  };
}
