// Where the mount stages what it is writing: its staging files (files above 64 KiB while they are
// written) and its journal (every close of a small file, appended before the close is answered).
//
// By default `<home>/daemon/staging`, on the store's filesystem, so a finished file is renamed into
// the store instead of copied. On a home on NFS that put every write through a mount over the network:
// `tar x` of 3,000 files took 6.4 s against 1.7 s with a local home (issue 38 item 14). HPC homes are
// NFS (or GPFS, Lustre) by default, so there the mount stages on this machine's own disk, in
// `/var/tmp/strata-<uid>/<home key>` (else the temp directory, if it is a disk and not memory): the
// store then copies each finished large file in (local-content-store-adopt.ts falls back to a copy
// across filesystems), off the path that answers the tools.
//
// The trade: what a mount had acknowledged but not versioned when its node crashed stays on that
// node's disk, and is versioned when Strata next runs there with this home (it is not lost; another
// node cannot see it meanwhile). STRATA_MOUNT_STAGING=home keeps staging in the home (a node whose own
// disk is too small), =/some/dir stages under that directory.

import { createHash } from 'node:crypto';
import { lstat, mkdir, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { detectFs } from '../watch/fs-type.js';

export interface StagingChoice {
  /** where staging files and the journal go */
  dir: string;
  /** 'home': beside the store; 'local': on this machine's disk because the home is not */
  where: 'home' | 'local';
  /** the home's network filesystem (e.g. 'nfs4 (filer:/export)'), null when local */
  homeNetwork: string | null;
  /** said in status and the log when staging crosses the network all the same */
  warning: string | null;
}

/** A directory of this user's alone under `root`: made 0700, and refused if someone else's or a link. */
async function privateDir(root: string, home: string): Promise<string | null> {
  const uid = process.getuid?.() ?? 0;
  const mine = join(root, `strata-${uid}`);
  try {
    await mkdir(mine, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return null;
  }
  // A world-writable root (/var/tmp): another user could have made it first, or put a link there.
  const info = await lstat(mine).catch(() => null);
  if (info === null || !info.isDirectory() || info.uid !== uid || (info.mode & 0o077) !== 0) return null;
  const key = createHash('sha256').update(home).digest('hex').slice(0, 16);
  const dir = join(mine, key, 'staging');
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // Writable (a read-only /var/tmp, a full one): found now, not at the first write through a mount.
    const probe = join(dir, `.probe-${process.pid}`);
    await writeFile(probe, '');
    await rm(probe, { force: true });
    // The home it serves, for whoever looks at the directory.
    await writeFile(join(mine, key, 'home'), `${home}\n`, { mode: 0o600 });
  } catch {
    return null;
  }
  return dir;
}

/** Whether `dir` is on a local disk (not a network filesystem, and not memory unless `memoryOk`). */
async function onLocalDisk(dir: string, memoryOk: boolean): Promise<boolean> {
  const fs = await detectFs(await realpath(dir).catch(() => dir));
  if (fs === null) return true;
  return !fs.network && (memoryOk || fs.fsType !== 'tmpfs');
}

export async function chooseStagingDir(home: string, homeStaging: string, env: NodeJS.ProcessEnv = process.env): Promise<StagingChoice> {
  const setting = env['STRATA_MOUNT_STAGING'] ?? '';
  const realHome = await realpath(home).catch(() => home);
  const fs = await detectFs(realHome);
  const homeNetwork = fs?.network === true ? `${fs.fsType} (${fs.source})` : null;
  const inHome: StagingChoice = { dir: homeStaging, where: 'home', homeNetwork, warning: null };
  if (setting === 'home') return inHome;
  if (setting.startsWith('/')) {
    const dir = await privateDir(setting, realHome);
    if (dir !== null) return { dir, where: 'local', homeNetwork, warning: null };
    return { ...inHome, warning: `STRATA_MOUNT_STAGING=${setting} cannot hold this user's staging files (not writable, or someone else's strata-${process.getuid?.() ?? 0} is there): staging in the home instead` };
  }
  if (homeNetwork === null) return inHome;
  for (const root of ['/var/tmp', tmpdir()]) {
    if (!(await onLocalDisk(root, false))) continue;
    const dir = await privateDir(root, realHome);
    if (dir !== null) return { dir, where: 'local', homeNetwork, warning: null };
  }
  return {
    ...inHome,
    warning:
      `the home is on ${homeNetwork} and no local disk directory could take the mount's staging files (/var/tmp and ${tmpdir()} are not writable disks here): ` +
      'every write through a mount is staged over the network, several times slower; set STRATA_MOUNT_STAGING=/a/local/dir',
  };
}
