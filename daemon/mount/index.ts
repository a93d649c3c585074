// Mount mode's project host (contract: daemon/host.ts). The daemon loads this module with a dynamic
// import only when a project uses mount mode, so watch-only daemons never load the FUSE addon.
import type { ContentStore } from '../../engine/ports/content-store.js';
import type { HostContext, HostFactory, HostStatus, ProjectHost } from '../host.js';
import { MountedProject } from './mounted-project.js';
import { createEngineSink } from './sink.js';

export { loadFuse } from './fuse-binding.js';
export { cleanStaleMount } from './stale-mount.js';

/** A HostContext may carry the daemon's local content store: reads then use positional file reads. */
type MountHostContext = HostContext & { store?: ContentStore };

class MountHost implements ProjectHost {
  private project: MountedProject | null = null;
  private state: HostStatus['state'] = 'starting';
  private error: { code: string; message: string } | null = null;

  constructor(private readonly ctx: MountHostContext) {}

  async start(): Promise<void> {
    const { ctx } = this;
    try {
      this.project = await MountedProject.start({
        engine: ctx.engine,
        projectId: ctx.projectId,
        store: ctx.store ?? null,
        home: ctx.home,
        dir: ctx.dir,
        stagingDir: ctx.stagingDir,
        dirStore: {
          list: () => ctx.state.emptyDirs.list(ctx.projectId),
          add: (path) => ctx.state.emptyDirs.add(ctx.projectId, path),
          remove: (path) => ctx.state.emptyDirs.remove(ctx.projectId, path),
        },
        sink: createEngineSink(ctx.engine, ctx.projectId, ctx.actor),
        logger: ctx.logger,
      });
      this.state = 'mounted';
    } catch (error) {
      this.state = 'error';
      this.error = { code: (error as { code?: string }).code ?? 'INTERNAL', message: (error as Error).message };
      throw error;
    }
  }

  async stop(): Promise<void> {
    const project = this.project;
    if (project === null) return;
    await project.stop();
    this.state = 'stopped';
  }

  status(): HostStatus {
    const mount = this.project?.status();
    return {
      state: this.state,
      backend: 'fuse',
      scan: null,
      warnings: mount?.warnings ?? [],
      pending: mount?.pending ?? 0,
      ...(mount === undefined
        ? {}
        : {
            capture: { captured: mount.captured, lastVersion: mount.lastVersion, errors: mount.errors },
            mount: { openFiles: mount.openFiles, dirty: mount.dirty, staged: mount.staged, ops: mount.ops },
          }),
      ...(this.error === null ? {} : { error: this.error }),
    };
  }

  trackedFiles(): number {
    return this.project?.trackedFiles() ?? 0;
  }
}

export const createMountHost: HostFactory = (ctx) => new MountHost(ctx);
