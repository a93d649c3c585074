import { Type } from 'typebox';
import { authorizeOrg, defaultOrgId } from '../../engine/access/authorize.js';
import { StrataError } from '../../engine/errors.js';
import { principalOf } from '../request-context.js';
import type { App, RouteDeps } from '../route-deps.js';
import { EmptyBody } from '../schemas.js';

const tags = ['maintenance'];

const GcSchema = Type.Object({
  objectsScanned: Type.Integer(),
  objectsDeleted: Type.Integer(),
  bytesFreed: Type.Integer(),
  objectsKept: Type.Integer(),
  bytesKept: Type.Integer(),
  graceMs: Type.Integer(),
});
const FsckSchema = Type.Object({
  scope: Type.Union([Type.Literal('store'), Type.Literal('projects')]),
  ok: Type.Boolean(),
  objectsChecked: Type.Integer(),
  referencesChecked: Type.Integer(),
  missing: Type.Array(Type.Object({ hash: Type.String(), referencedBy: Type.Optional(Type.String()) })),
  corrupt: Type.Array(Type.String()),
});

/**
 * The content store is shared, and deduplicated, by every organization of a deployment. While a
 * deployment has one organization, everything in it is that organization's; with more, a report on
 * the whole store would tell one organization about the others' objects (issue 13).
 */
async function soleOrganization(access: RouteDeps['access']): Promise<boolean> {
  return (await access.repository.access.listOrganizations()).length === 1;
}

export function registerAdminRoutes(app: App, { engine, access }: RouteDeps): void {
  // fsck checks what the caller's organization references (the whole store when it is the only one).
  // gc deletes content nobody references, which belongs to no organization: on a deployment with
  // several, it is the operator's job (`strata gc --config`/`--home` on the server), not an organization's.
  app.post(
    '/v1/admin/gc',
    {
      schema: { body: EmptyBody },
      config: { doc: { summary: 'Collect unreferenced content (org owner/admin of a single-organization deployment)', tags, response: GcSchema } },
    },
    async (request) => {
      const principal = principalOf(request);
      await authorizeOrg(access, principal, await defaultOrgId(access, principal), 'manage');
      if (!(await soleOrganization(access))) {
        throw new StrataError('FORBIDDEN', {
          // Both forms: the route does not know which storage the server runs on, and on Postgres and
          // S3 `--home` names only scratch space (the storage is in the server's config or environment).
          message:
            "gc acts on the content store every organization of this server shares: the server's operator runs it " +
            "(`strata gc --config FILE` with the server's config on Postgres and S3; `strata gc --home DIR` with its home otherwise)",
        });
      }
      return engine.gc();
    },
  );

  app.post(
    '/v1/admin/fsck',
    {
      schema: { body: EmptyBody },
      config: { doc: { summary: "Verify the content the caller's organization references (org owner/admin)", tags, response: FsckSchema } },
    },
    async (request) => {
      const principal = principalOf(request);
      const orgId = await defaultOrgId(access, principal);
      await authorizeOrg(access, principal, orgId, 'manage');
      if (await soleOrganization(access)) return engine.fsck();
      const projects = await access.repository.projects.list(orgId);
      return engine.fsck({ projectIds: projects.map((project) => project.projectId) });
    },
  );
}
