import { Type } from 'typebox';
import { authorizeOrg, defaultOrgId } from '../../engine/access/authorize.js';
import { principalOf } from '../request-context.js';
import type { App, RouteDeps } from '../route-deps.js';
import { EmptyBody } from '../schemas.js';

const tags = ['maintenance'];

const GcSchema = Type.Object({ objectsScanned: Type.Integer(), objectsDeleted: Type.Integer(), bytesFreed: Type.Integer() });
const FsckSchema = Type.Object({
  ok: Type.Boolean(),
  objectsChecked: Type.Integer(),
  referencesChecked: Type.Integer(),
  missing: Type.Array(Type.Object({ hash: Type.String(), referencedBy: Type.Optional(Type.String()) })),
  corrupt: Type.Array(Type.String()),
});

export function registerAdminRoutes(app: App, { engine, access }: RouteDeps): void {
  // gc and fsck act on the whole store, which every organization of this deployment shares: an org
  // admin (not project-scoped) may run them. A multi-tenant server will want a platform role here.
  app.post(
    '/v1/admin/gc',
    { schema: { body: EmptyBody }, config: { doc: { summary: 'Collect unreferenced content (org owner/admin)', tags, response: GcSchema } } },
    async (request) => {
      const principal = principalOf(request);
      await authorizeOrg(access, principal, await defaultOrgId(access, principal), 'manage');
      return engine.gc();
    },
  );

  app.post(
    '/v1/admin/fsck',
    { schema: { body: EmptyBody }, config: { doc: { summary: 'Verify stored content (org owner/admin)', tags, response: FsckSchema } } },
    async (request) => {
      const principal = principalOf(request);
      await authorizeOrg(access, principal, await defaultOrgId(access, principal), 'manage');
      return engine.fsck();
    },
  );
}
