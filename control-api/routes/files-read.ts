// GET fs/read: streams a file's bytes (current or a given version). The version is resolved first and
// read by id, so the ETag, the headers, a Range and the bytes all describe the same immutable version
// even if the path is rewritten meanwhile.

import { authorizeProject } from '../../engine/access/authorize.js';
import { StrataError } from '../../engine/errors.js';
import { normalizeProjectPath } from '../../engine/paths.js';
import { etagMatches, resolveRange } from '../http-range.js';
import { principalOf } from '../request-context.js';
import type { App, RouteDeps } from '../route-deps.js';
import { SinkDrivenStream } from '../sink-driven-stream.js';
import { ProjectParams, ReadQuery } from '../schemas.js';

export function registerFileReadRoute(app: App, { engine, access }: RouteDeps): void {
  app.get(
    '/v1/projects/:projectId/fs/read',
    {
      schema: { params: ProjectParams, querystring: ReadQuery },
      config: { doc: { summary: 'Read a file (Range supported)', tags: ['files'], produces: 'application/octet-stream' } },
    },
    async (request, reply) => {
      const { project } = await authorizeProject(access, principalOf(request), request.params.projectId, 'read');
      const projectId = project.projectId;
      const { versionId } = request.query;
      const path = request.query.path === undefined ? undefined : normalizeProjectPath(request.query.path, 'path');
      if (path === undefined && versionId === undefined) {
        throw new StrataError('INVALID_QUERY', { message: "Missing field 'path' (or 'versionId')", details: { field: 'path', reason: 'required' } });
      }

      let version: { versionId: string; contentHash: string | null; size: number; path: string; symlink: boolean };
      if (versionId !== undefined) {
        version = await engine.getVersion(projectId, versionId);
        if (path !== undefined && version.path !== path) throw new StrataError('VERSION_NOT_FOUND', { details: { versionId } });
      } else {
        const entry = await engine.stat({ projectId, path: path! });
        if (entry === null) throw new StrataError('PATH_NOT_FOUND', { details: { path } });
        version = entry;
      }
      if (version.contentHash === null) {
        throw new StrataError('PATH_NOT_FOUND', {
          message: 'This version is a deletion: it has no content',
          details: { path: version.path, versionId: version.versionId, deleted: true },
        });
      }

      const etag = `"${version.contentHash}"`;
      reply.header('etag', etag).header('x-strata-version-id', version.versionId).header('x-strata-content-hash', version.contentHash);
      // A symbolic link reads as its target's bytes (what readlink returns); this header tells it from
      // a file holding the same bytes.
      reply.header('x-strata-symlink', version.symlink ? 'true' : 'false');
      reply.header('accept-ranges', 'bytes');
      if (etagMatches(request.headers['if-none-match'], etag)) return reply.code(304).send();

      const range = resolveRange(request.headers.range, version.size);
      if (range === 'unsatisfiable') {
        reply.header('content-range', `bytes */${version.size}`);
        throw new StrataError('RANGE_NOT_SATISFIABLE', { details: { size: version.size } });
      }
      const read = await engine.readFile(range === null ? { projectId, versionId: version.versionId } : { projectId, versionId: version.versionId, range });
      reply.type('application/octet-stream');
      // A dataset kept in local files is written through a few reused buffers (sink-driven-stream.ts):
      // a fresh 1 MiB buffer per read made this process run full collections of its heap every few
      // megabytes (docs/benchmarks.md, "Full collections started by buffers").
      let body = read.stream;
      if (read.writeTo !== undefined) {
        read.stream.destroy();
        body = new SinkDrivenStream(read.writeTo);
      }
      if (range === null) return reply.header('content-length', read.size).send(body);
      return reply
        .code(206)
        .header('content-range', `bytes ${range.start}-${range.end}/${version.size}`)
        .header('content-length', range.end - range.start + 1)
        .send(body);
    },
  );
}
