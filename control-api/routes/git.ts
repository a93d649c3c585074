// Git interop over HTTP (docs/design.md §3, §5). The export path is fixed by the product spec.
import { Readable } from 'node:stream';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { audit } from '../../engine/access/audit.js';
import { authorizeProject } from '../../engine/access/authorize.js';
import { actorOf } from '../../engine/access/context.js';
import { principalOf } from '../request-context.js';
import type { App, RouteDeps } from '../route-deps.js';
import { ProjectParams, SnapshotParams } from '../schemas.js';
import { Type } from 'typebox';

const tags = ['git'];
const CommitId = Type.String({ pattern: '^[0-9a-f]{40}$', description: 'a git commit id (SHA-1)' });
const UploadQuery = Type.Object({ have: Type.Optional(CommitId) }, { additionalProperties: false });
const ReceiveSchema = Type.Object({
  applied: Type.Array(Type.Object({ snapshotId: Type.String(), commitId: CommitId })),
  alreadyPresent: Type.Integer(),
  head: Type.Union([Type.Object({ snapshotId: Type.String(), commitId: CommitId }), Type.Null()]),
});
const RefsSchema = Type.Object({
  ref: Type.Literal('refs/heads/main'),
  head: Type.Union([Type.Object({ snapshotId: Type.String(), seq: Type.Integer(), commitId: CommitId }), Type.Null()]),
  tags: Type.Array(Type.Object({ tag: Type.String(), snapshotId: Type.String(), commitId: CommitId })),
});

export function registerGitRoutes(app: App, { engine, access }: RouteDeps): void {
  app.get(
    '/v1/projects/:projectId/fs/snapshots/:snapshotId/git-export',
    {
      schema: { params: SnapshotParams },
      config: {
        doc: {
          summary: 'The snapshot chain up to this snapshot (id or tag) as a git fast-import stream: one commit per snapshot on refs/heads/main',
          tags,
          produces: 'application/octet-stream',
        },
      },
    },
    async (request, reply) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      const snapshot = await engine.getSnapshot(project.projectId, request.params.snapshotId);
      const stream = await engine.gitExport({ projectId: project.projectId, snapshotId: snapshot.snapshotId });
      return reply
        .type('application/octet-stream')
        .header('content-disposition', `attachment; filename="strata-${snapshot.snapshotId}.fast-import"`)
        .send(Readable.from(stream, { objectMode: false }));
    },
  );

  // The pushed stream is the raw body: a plugin context whose only parser passes it through unread.
  app.register(async (plugin) => {
    const child = plugin.withTypeProvider<TypeBoxTypeProvider>();
    child.removeAllContentTypeParsers();
    child.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    child.post(
      '/v1/projects/:projectId/fs/git/receive',
      {
        schema: { params: ProjectParams },
        config: {
          doc: {
            summary: "Receive a `git fast-export` stream of a linear history on refs/heads/main that fast-forwards the project's chain: each commit becomes a snapshot",
            tags,
            consumes: 'application/octet-stream',
            response: ReceiveSchema,
          },
        },
      },
      async (request) => {
        const principal = principalOf(request);
        const { project } = await authorizeProject(access, principal, request.params.projectId, 'write');
        const result = await engine.gitReceive({ projectId: project.projectId, actor: actorOf(principal), stream: request.body as AsyncIterable<Uint8Array> });
        if (result.applied.length > 0) {
          await audit(access, {
            orgId: project.orgId,
            actorId: principal.identity.identityId,
            action: 'git.receive',
            target: project.projectId,
            details: { commits: result.applied.length, head: result.head?.commitId ?? null },
          });
        }
        return result;
      },
    );
  });

  app.get(
    '/v1/projects/:projectId/fs/git/refs',
    { schema: { params: ProjectParams }, config: { doc: { summary: 'The chain as git refs: tip of refs/heads/main and tags, with commit ids', tags, response: RefsSchema } } },
    async (request) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      return engine.gitRefs(project.projectId);
    },
  );

  app.get(
    '/v1/projects/:projectId/fs/git/upload',
    {
      schema: { params: ProjectParams, querystring: UploadQuery },
      config: {
        doc: {
          summary: 'The whole chain as a git fast-import stream, or with ?have=COMMIT only what follows that commit (409 GIT_UNKNOWN_COMMIT if the chain lacks it)',
          tags,
          produces: 'application/octet-stream',
        },
      },
    },
    async (request, reply) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      const { have } = request.query;
      const stream = await engine.gitUpload({ projectId: project.projectId, ...(have === undefined ? {} : { haveCommitId: have }) });
      return reply.type('application/octet-stream').send(Readable.from(stream, { objectMode: false }));
    },
  );
}
