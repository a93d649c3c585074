// Which filesystem a directory lives on, from /proc/self/mountinfo (the longest mount point that
// contains it), else statfs(2)'s magic number. Two things depend on it:
// - watch mode: network and cluster filesystems do not deliver inotify events for changes made by
//   other machines (NFS, Lustre, CephFS, SMB, sshfs, 9p, JuiceFS ...), so watch mode polls them;
// - a home on one (server/home-claim.ts): SQLite's WAL must never be used from two hosts at once, and
//   a mount stages its writes on local disk instead (daemon/mount/staging-dir.ts).
//
// FUSE filesystems are named by their subtype (`fuse.sshfs`). Network clients not on the list were
// taken for local disks: other machines' writes to a JuiceFS project went unversioned for up to the
// 10-minute reconciliation, with a plain "watching" in status (issue 38). So a FUSE mount whose source
// looks remote (`host:/path`, `user@host:`, `s3://bucket`, `JuiceFS:name`) counts as network too, and
// `strata watch --poll` covers whatever still slips through.

import { statfs } from 'node:fs/promises';
import { readFile } from 'node:fs/promises';

export const NETWORK_FS_TYPES: ReadonlySet<string> = new Set([
  // kernel clients
  'nfs',
  'nfs4',
  'cifs',
  'smb3',
  'smbfs',
  'ncpfs',
  'coda',
  'afs',
  'lustre',
  'gpfs',
  'beegfs',
  'ceph',
  'glusterfs',
  'orangefs',
  'pvfs2',
  'ocfs2',
  'gfs2',
  'wekafs',
  'panfs',
  '9p',
  'virtiofs',
  'vboxsf',
  'davfs',
  // FUSE clients
  'fuse.sshfs',
  'fuse.ceph',
  'fuse.cephfs',
  'fuse.glusterfs',
  'fuse.s3fs',
  'fuse.rclone',
  'fuse.gcsfuse',
  'fuse.davfs2',
  'fuse.juicefs',
  'fuse.s3ql',
  'fuse.mountpoint-s3',
  'fuse.mount-s3',
  'fuse.goofys',
  'fuse.geesefs',
  'fuse.fuse-nfs',
  'fuse.curlftpfs',
  'fuse.blobfuse',
  'fuse.blobfuse2',
  'fuse.ossfs',
  'fuse.cosfs',
  'fuse.obsfs',
  'fuse.alluxio-fuse',
  'fuse.seaweedfs',
  'fuse.weed',
  'fuse.mfs',
  'fuse.lizardfs',
  'fuse.xtreemfs',
  'fuse.quobyte',
  'fuse.cvmfs2',
  'fuse.vmhgfs-fuse',
]);

/** statfs(2) f_type magic numbers of network and cluster filesystems (linux/magic.h and their sources). */
const NETWORK_MAGIC: ReadonlyMap<number, string> = new Map([
  [0x6969, 'nfs'],
  [0x517b, 'smbfs'],
  [0xff534d42, 'cifs'],
  [0xfe534d42, 'smb3'],
  [0x5346414f, 'afs'],
  [0x6b414653, 'afs'],
  [0x73757245, 'coda'],
  [0x564c, 'ncpfs'],
  [0x0bd00bd0, 'lustre'],
  [0x47504653, 'gpfs'],
  [0x19830326, 'beegfs'],
  [0x00c36400, 'ceph'],
  [0x20030528, 'orangefs'],
  [0x7461636f, 'ocfs2'],
  [0x01161970, 'gfs2'],
  [0x01021997, '9p'],
]);
const FUSE_MAGIC = 0x65735546;

export interface FsInfo {
  mountPoint: string;
  fsType: string;
  source: string;
  network: boolean;
  /** the filesystem's device, `major:minor` (its /sys/class/bdi entry) */
  device: string;
  /** the super block's options (`rw,vers=4.2,local_lock=none,...`); '' when unknown */
  options: string;
}

/** Octal escapes in mountinfo paths: `\040` is a space. */
function unescapeOctal(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_m, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/**
 * Whether a filesystem of `fsType` mounted from `source` is a network one: listed, or a FUSE mount of
 * a remote-looking source (not a local path or a device, as bindfs, encfs or ntfs-3g have).
 */
export function isNetworkFs(fsType: string, source: string): boolean {
  if (NETWORK_FS_TYPES.has(fsType)) return true;
  if (fsType !== 'fuse' && !fsType.startsWith('fuse.')) return false;
  if (source === '' || source.startsWith('/')) return false;
  return /^[^/\s]+:/.test(source) || source.includes('@') || /^(mountpoint-s3|mount-s3|s3fs|gcsfuse|juicefs|s3ql|goofys|rclone|sshfs)\b/i.test(source);
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
      const source = unescapeOctal(right[1] ?? '');
      best = { mountPoint, fsType, source, network: isNetworkFs(fsType, source), device: left[2] ?? '', options: right[2] ?? '' };
    }
  }
  return best;
}

/** The filesystem type statfs(2) reports, by name where it is a network one ('fuse' for any FUSE). */
export function fsTypeFromMagic(magic: number): { fsType: string; network: boolean } | null {
  const name = NETWORK_MAGIC.get(magic >>> 0);
  if (name !== undefined) return { fsType: name, network: true };
  if (magic >>> 0 === FUSE_MAGIC) return { fsType: 'fuse', network: false };
  return null;
}

export async function detectFs(path: string): Promise<FsInfo | null> {
  try {
    const info = fsInfoFromMountinfo(await readFile('/proc/self/mountinfo', 'utf8'), path);
    if (info !== null) return info;
  } catch {
    // Not Linux, or /proc not mounted: statfs below.
  }
  try {
    const magic = fsTypeFromMagic(Number((await statfs(path)).type));
    if (magic !== null) return { mountPoint: '', fsType: magic.fsType, source: '', network: magic.network, device: '', options: '' };
  } catch {
    // no such path
  }
  // Assume a local filesystem (events work on macOS/BSD local disks).
  return null;
}

/**
 * Whether fcntl locks taken on `fs` are seen by other hosts that mount it: true for the network
 * filesystems that forward them to a server (NFS unless mounted `nolock` or `local_lock=all|posix`,
 * SMB unless `nobrl`, Lustre with `flock`, GPFS, CephFS) and for local disks (another host reaches
 * one only through this kernel's NFS server, whose clients' locks land in this kernel); false for the
 * rest (FUSE clients keep them on the client, 9p, virtiofs, BeeGFS without global locks ...), where
 * only the lease keeps a second host out.
 */
export function locksReachOtherHosts(fs: FsInfo | null): boolean {
  if (fs === null || !fs.network) return true;
  const options = new Set(fs.options.split(','));
  switch (fs.fsType) {
    case 'nfs':
    case 'nfs4':
      return !options.has('nolock') && !options.has('local_lock=all') && !options.has('local_lock=posix');
    case 'cifs':
    case 'smb3':
      return !options.has('nobrl');
    case 'lustre':
      return options.has('flock');
    case 'gpfs':
    case 'ceph':
      return true;
    default:
      return false;
  }
}
