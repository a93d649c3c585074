// The daemon-only routes, registered on the shared control API through `buildApp({ extraRoutes })`:
// same authentication, loopback guard and error bodies as every other route. They manage the local
// machine's projects, so they need an organization owner/admin (the local owner key is one).

import { Type } from 'typebox';
import { authorizeOrg, authorizeProject } from '../engine/access/authorize.js';
import { StrataError } from '../engine/errors.js';
import { principalOf } from '../control-api/request-context.js';
import type { App, RouteDeps } from '../control-api/route-deps.js';
import { EmptyBody, ProjectParams } from '../control-api/schemas.js';
import { MAX_POLL_MS, MIN_POLL_MS } from './config.js';
import type { RunningDaemon } from './daemon.js';
import { normalizeServerUrl } from './sync/link.js';

const tags = ['daemon'];
const SyncQuery = Type.Object(
  { verify: Type.Optional(Type.Boolean({ description: "also ask each server now whether it has changes not applied here (what `strata sync wait` relies on)" })) },
  { additionalProperties: false },
);
const WatchSettingsBody = Type.Object(
  {
    pollMs: Type.Union([Type.Integer({ minimum: MIN_POLL_MS, maximum: MAX_POLL_MS }), Type.Null()], {
      description: 'scan the directory this often instead of waiting for inotify events; null: back to events (or automatic polling on a known network filesystem)',
    }),
  },
  { additionalProperties: false },
);
const AddProjectBody = Type.Object(
  {
    dir: Type.String({ minLength: 1, maxLength: 4096, description: 'absolute path of the directory to bind' }),
    mode: Type.Optional(Type.Union([Type.Literal('watch'), Type.Literal('mount')], { default: 'watch' })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    sync: Type.Optional(
      Type.Object(
        {
          server: Type.String({ minLength: 1, maxLength: 2048 }),
          remoteProjectId: Type.String({ minLength: 1, maxLength: 64 }),
          workstation: Type.String({ minLength: 1, maxLength: 64 }),
        },
        { additionalProperties: false, description: 'link to a server project (its API key is kept in the home by the CLI)' },
      ),
    ),
    requireEmpty: Type.Optional(Type.Boolean({ description: 'refuse a directory that has files (a clone)' })),
    import: Type.Optional(
      Type.Boolean({ description: 'mount mode over a directory that has files: import them, mount over them, write the tree back there at unmount' }),
    ),
  },
  { additionalProperties: false },
);

export function registerDaemonRoutes(app: App, { access }: RouteDeps, daemon: RunningDaemon): void {
  app.get('/v1/daemon/status', { config: { doc: { summary: 'Daemon and per-project capture status', tags } } }, async (request) => {
    const principal = principalOf(request);
    await authorizeOrg(access, principal, daemon.owner.orgId, 'manage');
    // The sync figures as /v1/daemon/sync shows them (`strata status` and `strata sync status` agree).
    for (const { projectId } of daemon.status().projects) await daemon.project(projectId)?.sync?.refreshStatus();
    return daemon.status();
  });

  app.post(
    '/v1/daemon/projects',
    { schema: { body: AddProjectBody }, config: { doc: { summary: 'Bind a directory to a new project and start capturing', tags, status: 201 } } },
    async (request, reply) => {
      const principal = principalOf(request);
      await authorizeOrg(access, principal, daemon.owner.orgId, 'manage');
      const { dir, mode, name, sync, requireEmpty, import: importFiles } = request.body;
      if (!dir.startsWith('/')) {
        throw new StrataError('INVALID_ARGUMENT', { message: 'dir must be an absolute path', details: { field: 'dir' } });
      }
      const result = await daemon.addProject({
        dir,
        mode: mode ?? 'watch',
        ...(name === undefined ? {} : { name }),
        ...(sync === undefined ? {} : { sync: { ...sync, server: normalizeServerUrl(sync.server) } }),
        ...(requireEmpty === undefined ? {} : { requireEmpty }),
        ...(importFiles === undefined ? {} : { import: importFiles }),
      });
      return reply.code(result.project.created ? 201 : 200).send(result);
    },
  );

  app.post(
    '/v1/daemon/projects/:projectId/unmount',
    {
      schema: { params: ProjectParams, body: EmptyBody },
      config: { doc: { summary: 'Stop serving a mount project until it is mounted again (an in-place one writes its files back)', tags } },
    },
    async (request) => {
      await authorizeOrg(access, principalOf(request), daemon.owner.orgId, 'manage');
      return daemon.unmountProject(request.params.projectId);
    },
  );

  app.post(
    '/v1/daemon/projects/:projectId/guard/reset',
    {
      schema: { params: ProjectParams, body: EmptyBody },
      config: { doc: { summary: 'Resume recording deletions after the mass-delete guard tripped', tags } },
    },
    async (request) => {
      const principal = principalOf(request);
      await authorizeProject(access, principal, request.params.projectId, 'write');
      const runner = daemon.project(request.params.projectId);
      if (!runner) throw new StrataError('PROJECT_NOT_FOUND', { message: 'This daemon does not run that project', details: { projectId: request.params.projectId } });
      await runner.resetGuard();
      return runner.status();
    },
  );

  app.get(
    '/v1/daemon/sync',
    {
      schema: { querystring: SyncQuery },
      config: { doc: { summary: 'Replication state of every project linked to a server, with the reasons it is not in sync', tags } },
    },
    async (request) => {
      await authorizeOrg(access, principalOf(request), daemon.owner.orgId, 'manage');
      const verify = request.query.verify === true;
      const projects = [];
      for (const status of daemon.status().projects) {
        const sync = daemon.project(status.projectId)?.sync;
        if (!sync) continue;
        // The verdict is sync-verdict.ts's, the same `strata status` and the web page show; `verify`
        // (sync wait) also asks the server whether it has anything newer right now.
        await sync.refreshStatus({ verify });
        projects.push({ projectId: status.projectId, name: status.name, dir: status.dir, mode: status.mode, sync: sync.status() });
      }
      return { projects };
    },
  );

  app.put(
    '/v1/daemon/projects/:projectId/watch',
    {
      schema: { params: ProjectParams, body: WatchSettingsBody },
      config: { doc: { summary: 'How a watched project learns of changes: polling at an interval, or inotify events (kept in daemon.json)', tags } },
    },
    async (request) => {
      await authorizeOrg(access, principalOf(request), daemon.owner.orgId, 'manage');
      return daemon.setPolling(request.params.projectId, request.body.pollMs);
    },
  );


  app.post(
    '/v1/daemon/projects/:projectId/sync/confirm',
    {
      schema: { params: ProjectParams, body: EmptyBody },
      config: { doc: { summary: 'Apply the incoming deletions the mass-delete guard holds', tags } },
    },
    async (request) => {
      await authorizeProject(access, principalOf(request), request.params.projectId, 'write');
      const sync = daemon.project(request.params.projectId)?.sync;
      if (!sync) throw new StrataError('SYNC_NOT_LINKED', { details: { projectId: request.params.projectId } });
      sync.confirmHeld();
      return sync.status();
    },
  );
}
