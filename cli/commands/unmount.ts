// `strata unmount DIR`: the running daemon stops serving DIR's mount and remembers it (daemon.json
// `unmounted`) so a restart does not mount it again; `strata mount DIR` does. An in-place mount
// (`strata mount --import`) writes the project's tree back into DIR first. Without a daemon nothing
// is mounted: DIR is only marked, unless its last in-place mount was killed before it could write the
// files back — then DIR is not what the project holds, and the user is told how to finish.

import { realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { UnmountResult } from '../../daemon/daemon.js';
import { StrataError } from '../../engine/errors.js';
import { runningDaemon } from './daemon.js';
import { refuseIfElsewhere } from '../home-elsewhere.js';

export async function unmountProject(home: string, dirArg: string): Promise<UnmountResult> {
  const { daemonLayout, readDaemonConfig, writeDaemonConfig } = await import('../../daemon/config.js');
  const dir = await realpath(resolve(dirArg)).catch(() => resolve(dirArg));
  const config = readDaemonConfig(home);
  const entry = config.projects.find((p) => p.dir === dir || p.dir === resolve(dirArg));
  if (entry === undefined) {
    throw new StrataError('PROJECT_NOT_FOUND', { message: `${dir} is not a project directory of ${home}`, details: { dir, home } });
  }
  const client = await runningDaemon(home);
  if (client !== null) return client.json<UnmountResult>('POST', `/v1/daemon/projects/${encodeURIComponent(entry.projectId)}/unmount`, { json: {} });
  // The mount is served on the host that holds the home: nothing of it can be undone from here.
  refuseIfElsewhere(home, '`strata unmount`');

  if (entry.mode !== 'mount') {
    throw new StrataError('INVALID_ARGUMENT', {
      message: `${entry.dir} is watched, not mounted: there is nothing to unmount (its files are in the directory)`,
      details: { field: 'dir', dir: entry.dir, mode: entry.mode },
    });
  }
  if (entry.inPlace === true) {
    const { openDaemonState } = await import('../../daemon/state.js');
    const { IN_PLACE_FLAG } = await import('../../daemon/mount/in-place/in-place.js');
    const { withHomeClaim } = await import('../../server/home-claim.js');
    const session = await withHomeClaim(home, 'strata unmount', async () => {
      const state = openDaemonState(daemonLayout(home).state);
      try {
        return state.flags.get<{ session: string }>(entry.projectId, IN_PLACE_FLAG)?.session;
      } finally {
        state.close();
      }
    });
    if (session === 'mounted' && entry.unmounted !== true) {
      throw new StrataError('WRITE_BACK_PENDING', {
        message: `${entry.dir} was mounted when its daemon stopped without unmounting it (killed?): the directory does not hold the changes made through the mount. Run \`strata daemon\` (or \`strata mount ${entry.dir}\`), which mounts it again with every change, then \`strata unmount ${entry.dir}\``,
        details: { dir: entry.dir, projectId: entry.projectId },
      });
    }
  } else {
    // A plain mount killed with its daemon leaves a dead mount point: it goes (nothing is under it).
    const { cleanStaleMount } = await import('../../daemon/mount/stale-mount.js');
    await cleanStaleMount(entry.dir);
  }
  if (entry.unmounted !== true) {
    await writeDaemonConfig(home, { ...config, projects: config.projects.map((p) => (p === entry ? { ...entry, unmounted: true } : p)) });
  }
  return { projectId: entry.projectId, dir: entry.dir, inPlace: entry.inPlace === true, wasMounted: false, writeBack: null };
}
