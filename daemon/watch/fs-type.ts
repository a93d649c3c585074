// Which filesystem a directory lives on, from /proc/self/mountinfo (the longest mount point that
// contains it). Network and cluster filesystems do not deliver inotify events for changes made by
// other machines (NFS, Lustre, CephFS, SMB, sshfs, 9p), so watch mode polls them instead.

import { readFile } from 'node:fs/promises';

export const NETWORK_FS_TYPES: ReadonlySet<string> = new Set([
  'nfs',
  'nfs4',
  'lustre',
  'ceph',
  'fuse.ceph',
  'fuse.cephfs',
  'cifs',
  'smb3',
  'smbfs',
  'fuse.sshfs',
  '9p',
  'afs',
  'gpfs',
  'beegfs',
  'glusterfs',
  'fuse.glusterfs',
  'fuse.s3fs',
  'fuse.rclone',
  'fuse.gcsfuse',
  'virtiofs',
  'davfs',
  'fuse.davfs2',
]);

export interface FsInfo {
  mountPoint: string;
  fsType: string;
  source: string;
  network: boolean;
  /** the filesystem's device, `major:minor` (its /sys/class/bdi entry) */
  device: string;
}

/** Octal escapes in mountinfo paths: `\040` is a space. */
function unescapeOctal(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_m, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/** Parses mountinfo text and finds the mount holding `path` (absolute, real). */
export function fsInfoFromMountinfo(mountinfo: string, path: string): FsInfo | null {
  let best: FsInfo | null = null;
  for (const line of mountinfo.split('\n')) {
    // id parent major:minor root mountpoint options [optional fields...] - fstype source superoptions
    const dash = line.indexOf(' - ');
    if (dash === -1) continue;
    const left = line.slice(0, dash).split(' ');
    const right = line.slice(dash + 3).split(' ');
    const mountPoint = unescapeOctal(left[4] ?? '');
    const fsType = right[0] ?? '';
    if (mountPoint === '' || fsType === '') continue;
    const contains = mountPoint === '/' || path === mountPoint || path.startsWith(`${mountPoint}/`);
    // Later lines win ties: a mount stacked on the same point hides the earlier one.
    if (contains && (best === null || mountPoint.length >= best.mountPoint.length)) {
      best = { mountPoint, fsType, source: unescapeOctal(right[1] ?? ''), network: NETWORK_FS_TYPES.has(fsType), device: left[2] ?? '' };
    }
  }
  return best;
}

export async function detectFs(path: string): Promise<FsInfo | null> {
  try {
    return fsInfoFromMountinfo(await readFile('/proc/self/mountinfo', 'utf8'), path);
  } catch {
    // Not Linux, or /proc not mounted: assume a local filesystem (events work on macOS/BSD local disks).
    return null;
  }
}
