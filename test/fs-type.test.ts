// Which filesystems count as network ones (daemon/watch/fs-type.ts): watch mode polls them, a home on
// one is held by one host (server/home-claim.ts) and a mount stages on local disk. FUSE network
// clients missing from the list were taken for local disks (issue 38 item 13).

import { describe, expect, it } from 'vitest';
import { fsInfoFromMountinfo, fsTypeFromMagic, isNetworkFs, locksReachOtherHosts } from '../daemon/watch/fs-type.js';

const MOUNTINFO = [
  '22 1 252:0 / / rw,relatime shared:1 - ext4 /dev/vda rw',
  '40 22 0:40 / /mnt/jfs rw,relatime - fuse.juicefs JuiceFS:myjfs rw,user_id=0,group_id=0,default_permissions,allow_other',
  '41 22 0:41 / /mnt/s3ql rw - fuse.s3ql s3://bucket/prefix rw',
  '42 22 0:42 / /mnt/ms3 rw - fuse mountpoint-s3 rw,user_id=1000',
  '43 22 0:43 / /mnt/bind rw - fuse /srv/data rw,user_id=0',
  '44 22 0:44 / /mnt/nfsnolock rw - nfs filer:/export rw,vers=3,nolock,local_lock=all,addr=10.0.0.1',
  '45 22 0:45 / /mnt/nfs rw - nfs4 filer:/export rw,vers=4.2,local_lock=none,addr=10.0.0.1',
  '46 22 0:46 / /mnt/ssh rw - fuse.sshfs u@host:/data rw',
  '47 22 0:47 / /mnt/ntfs rw - fuseblk /dev/sdb1 rw',
].join('\n');

describe('network filesystems', () => {
  it('recognises FUSE network clients by type, and unknown FUSE mounts by a remote-looking source', () => {
    expect(fsInfoFromMountinfo(MOUNTINFO, '/mnt/jfs/p')).toMatchObject({ fsType: 'fuse.juicefs', network: true });
    expect(fsInfoFromMountinfo(MOUNTINFO, '/mnt/s3ql/p')).toMatchObject({ fsType: 'fuse.s3ql', network: true });
    expect(fsInfoFromMountinfo(MOUNTINFO, '/mnt/ms3/p')).toMatchObject({ fsType: 'fuse', network: true });
    // bindfs of a local directory, ntfs-3g of a disk: local.
    expect(fsInfoFromMountinfo(MOUNTINFO, '/mnt/bind/p')).toMatchObject({ fsType: 'fuse', network: false });
    expect(fsInfoFromMountinfo(MOUNTINFO, '/mnt/ntfs/p')).toMatchObject({ network: false });
    for (const [type, source] of [
      ['fuse', 'user@host:/x'],
      ['fuse.somenewfs', 'server:/export'],
      ['fuse.rclone', 'remote:'],
      ['fuse.mountpoint-s3', 'mountpoint-s3'],
      ['beegfs', 'beegfs_nodev'],
      ['gpfs', 'gpfs0'],
      ['lustre', '10.0.0.1@tcp:/scratch'],
    ]) {
      expect(isNetworkFs(type!, source!), `${type} ${source}`).toBe(true);
    }
    expect(isNetworkFs('fuse.gocryptfs', '/home/u/.cipher')).toBe(false);
    expect(isNetworkFs('ext4', '/dev/vda')).toBe(false);
  });

  it('names network filesystems by statfs magic where mountinfo says nothing', () => {
    expect(fsTypeFromMagic(0x6969)).toEqual({ fsType: 'nfs', network: true });
    expect(fsTypeFromMagic(0xff534d42)).toEqual({ fsType: 'cifs', network: true });
    expect(fsTypeFromMagic(0x0bd00bd0)).toEqual({ fsType: 'lustre', network: true });
    expect(fsTypeFromMagic(0x47504653)).toEqual({ fsType: 'gpfs', network: true });
    expect(fsTypeFromMagic(0xef53)).toBeNull(); // ext4
  });

  it('knows where fcntl locks reach other hosts', () => {
    expect(locksReachOtherHosts(fsInfoFromMountinfo(MOUNTINFO, '/mnt/nfs/p'))).toBe(true);
    expect(locksReachOtherHosts(fsInfoFromMountinfo(MOUNTINFO, '/mnt/nfsnolock/p'))).toBe(false);
    expect(locksReachOtherHosts(fsInfoFromMountinfo(MOUNTINFO, '/mnt/ssh/p'))).toBe(false);
    expect(locksReachOtherHosts(fsInfoFromMountinfo(MOUNTINFO, '/home/u'))).toBe(true);
  });
});
