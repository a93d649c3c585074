// The engine as the daemon's control API sees it: a restore or a snapshot is computed from the
// project's current state, so what the directory holds that is not versioned yet (an edit in its
// settle delay, a deletion waiting to commit) is captured first (ProjectHost.captureNow). Without
// this, `rm f; strata snapshot restore 1` found f unchanged in the engine, restored nothing, and the
// deletion landed after it; `mkdir d; echo x > d/f; strata snapshot restore N` left d/f on disk,
// versioned as a plain write after the restore; a snapshot taken right after a save lacked it
// (issue 38 items 9 and 11).
//
// A restore or a write must also be able to do what it reports: before the engine records anything,
// the host checks that each path it will write can be written (ProjectHost.checkWritable: watch mode
// refuses a path below a link — an API write to sub/race1.txt answered 201 while sub had just become
// a link on disk, and the file never appeared (issue 38 item 8) — and a directory holding files the
// project does not version where a restored file goes).

import type { Engine } from '../engine/engine-api.js';
import type { ProjectHost } from './host.js';

export function captureFirst(engine: Engine, hostOf: (projectId: string) => ProjectHost | null | undefined): Engine {
  const before = async (projectId: string) => {
    await hostOf(projectId)?.captureNow?.();
  };
  const writable = async (projectId: string, paths: string[]) => {
    await hostOf(projectId)?.checkWritable?.(paths);
  };
  const overrides: Partial<Engine> = {
    async writeFile(input) {
      await writable(input.projectId, [input.path]);
      return engine.writeFile(input);
    },
    async renameFile(input) {
      await writable(input.projectId, [input.to]);
      return engine.renameFile(input);
    },
    async createSnapshot(input) {
      await before(input.projectId);
      return engine.createSnapshot(input);
    },
    async restoreVersion(input) {
      await before(input.projectId);
      const host = hostOf(input.projectId);
      if (host?.checkWritable !== undefined) {
        const version = await engine.getVersion(input.projectId, input.versionId);
        if (version.contentHash !== null) await host.checkWritable([version.path]);
      }
      return engine.restoreVersion(input);
    },
    async restoreSnapshot(input) {
      await before(input.projectId);
      const host = hostOf(input.projectId);
      if (host?.checkWritable !== undefined) {
        // The paths the restore writes a file or link to: the snapshot has them, differently from now;
        // the ones it deletes (the snapshot lacks them) may be links in the way of the others.
        const diff = await engine.diffSnapshots({ projectId: input.projectId, from: input.snapshotId });
        const removing = new Set(diff.filter((item) => item.before === null).map((item) => item.path));
        await host.checkWritable(diff.filter((item) => item.before !== null).map((item) => item.path), removing);
      }
      return engine.restoreSnapshot(input);
    },
  };
  return new Proxy(engine, {
    get(target, property, receiver) {
      if (typeof property === 'string' && Object.hasOwn(overrides, property)) return overrides[property as keyof Engine];
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
