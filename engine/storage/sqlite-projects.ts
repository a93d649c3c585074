import type { Database } from 'better-sqlite3';
import { StrataError } from '../errors.js';
import type { ProjectRepository } from '../ports/metadata-repository.js';
import type { DatasetRules, Project, VersioningPolicy } from '../types.js';
import { run } from './sqlite-rows.js';

export interface ProjectRow {
  project_id: string;
  org_id: string;
  name: string;
  created_at: string;
  policy: string;
  max_versions: number;
  datasets: string;
}

export function toProject(row: ProjectRow): Project {
  return {
    projectId: row.project_id,
    orgId: row.org_id,
    name: row.name,
    createdAt: row.created_at,
    // Stored as the JSON the engine gave us, so the object round-trips key for key.
    policy: JSON.parse(row.policy) as VersioningPolicy,
    retention: { maxVersions: row.max_versions },
    datasets: JSON.parse(row.datasets) as DatasetRules,
  };
}

export function createSqliteProjects(db: Database): ProjectRepository {
  const insert = db.prepare(
    'INSERT INTO projects (project_id, org_id, name, created_at, policy, max_versions, datasets) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const byId = db.prepare('SELECT * FROM projects WHERE project_id = ?');
  const byOrg = db.prepare('SELECT * FROM projects WHERE org_id = ? ORDER BY name, project_id');
  const write = db.prepare('UPDATE projects SET name = ?, policy = ?, max_versions = ?, datasets = ? WHERE project_id = ?');

  const get = (projectId: string): Project | null => {
    const row = byId.get(projectId) as ProjectRow | undefined;
    return row === undefined ? null : toProject(row);
  };

  const update = db.transaction(
    (projectId: string, patch: Partial<Pick<Project, 'name' | 'policy' | 'retention' | 'datasets'>>): Project => {
      const current = get(projectId);
      if (current === null) throw new StrataError('PROJECT_NOT_FOUND', { details: { projectId } });
      const next: Project = {
        ...current,
        name: patch.name ?? current.name,
        policy: patch.policy ?? current.policy,
        retention: patch.retention ?? current.retention,
        datasets: patch.datasets ?? current.datasets,
      };
      write.run(next.name, JSON.stringify(next.policy), next.retention.maxVersions, JSON.stringify(next.datasets), projectId);
      return next;
    },
  );

  return {
    create: (project) =>
      run(() => {
        insert.run(
          project.projectId,
          project.orgId,
          project.name,
          project.createdAt,
          JSON.stringify(project.policy),
          project.retention.maxVersions,
          JSON.stringify(project.datasets),
        );
      }),
    get: (projectId) => run(() => get(projectId)),
    list: (orgId) => run(() => (byOrg.all(orgId) as ProjectRow[]).map(toProject)),
    update: (projectId, patch) => run(() => update.immediate(projectId, patch)),
  };
}
