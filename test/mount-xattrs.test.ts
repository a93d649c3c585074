// Extended attributes and POSIX ACLs through the mount (issue 39 item 4): get/set/list all answered
// ENOTSUP, so `rsync -aHAX` exited 23 and never reached "nothing to transfer", `tar --xattrs` warned,
// and a group project directory could not be shared with `setfacl -m g:lab:rwX`. Now a versioned
// file's or directory's attributes are kept with its mode (attrs.ts: across restarts, along renames,
// gone with a removal; the path's, not part of a version), an ignored file's in the backing
// directory, and ACLs are enforced by the kernel (FUSE_CAP_POSIX_ACL) with the mode kept in step and
// directories' default ACLs inherited. Needs setfattr/getfattr (Debian `attr`) and setfacl/getfacl
// (`acl`), and root (to act as `nobody` through setpriv).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject, sh } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject();
});

afterAll(async () => {
  await m?.dispose();
});

const p = (suffix: string) => `/v1/projects/${m.projectId}${suffix}`;
const asNobody = (script: string) => inMount(m, `setpriv --reuid=65534 --regid=65534 --clear-groups bash -c '${script}' 2>&1 && echo ok || echo denied`);

const PY_FLAGS = `
import os, errno
os.setxattr('flags.txt', 'user.k', b'v1', os.XATTR_CREATE)
try:
    os.setxattr('flags.txt', 'user.k', b'v2', os.XATTR_CREATE); print('create-again: no error')
except OSError as e: print('create-again:', errno.errorcode[e.errno])
try:
    os.setxattr('flags.txt', 'user.missing', b'v', os.XATTR_REPLACE); print('replace-missing: no error')
except OSError as e: print('replace-missing:', errno.errorcode[e.errno])
os.setxattr('flags.txt', 'user.k', b'v3', os.XATTR_REPLACE)
print('value:', os.getxattr('flags.txt', 'user.k').decode())
try:
    os.getxattr('flags.txt', 'user.none'); print('missing: no error')
except OSError as e: print('missing:', errno.errorcode[e.errno])
os.setxattr('flags.txt', 'user.big', b'x' * 60000)
print('big:', len(os.getxattr('flags.txt', 'user.big')))
print('names:', sorted(os.listxattr('flags.txt')))
`;

describe('extended attributes', () => {
  it('are kept on files, directories and ignored files, with XATTR_CREATE/REPLACE and ENODATA as on any filesystem', async () => {
    await inMount(m, 'echo data > flags.txt && mkdir dir && echo cache > junk.pyc');
    expect((await inMount(m, `python3 -c "${PY_FLAGS}"`)).stdout.trim().split('\n')).toEqual([
      'create-again: EEXIST',
      'replace-missing: ENODATA',
      'value: v3',
      'missing: ENODATA',
      'big: 60000',
      "names: ['user.big', 'user.k']",
    ]);
    await inMount(m, 'setfattr -n user.kind -v results dir && setfattr -n user.kind -v scratch junk.pyc');
    expect((await inMount(m, 'getfattr --only-values -n user.kind dir; echo; getfattr --only-values -n user.kind junk.pyc')).stdout).toBe('results\nscratch');
    await inMount(m, 'setfattr -x user.big flags.txt');
    expect((await inMount(m, 'getfattr -d --absolute-names flags.txt')).stdout).toBe('# file: flags.txt\nuser.k="v3"\n\n');
  });

  it('follow a rename, go with a removal, and stay through a restore of an older version', async () => {
    await inMount(m, 'echo v1 > tagged.txt && setfattr -n user.origin -v lab1 tagged.txt && mv tagged.txt moved.txt');
    expect((await inMount(m, 'getfattr --only-values -n user.origin moved.txt')).stdout).toBe('lab1');
    await inMount(m, 'rm moved.txt && echo v1 > moved.txt');
    expect((await inMount(m, 'getfattr -d moved.txt')).stdout).toBe('');
    await inMount(m, 'setfattr -n user.origin -v lab2 moved.txt');
    await m.idle();
    const [first] = await m.history('moved.txt');
    await inMount(m, 'sleep 0.2; echo v2 > moved.txt');
    await m.idle();
    await m.api('POST', p('/history/restore'), { versionId: first!.versionId });
    expect((await inMount(m, 'cat moved.txt; getfattr --only-values -n user.origin moved.txt')).stdout).toBe('v1\nlab2');
  });
});

describe('file capabilities', () => {
  it('are dropped by a write of someone else, as the kernel asks (answered in C only while no file has any)', async () => {
    const caps = `import os, struct; os.setxattr('capf', 'security.capability', struct.pack('<IIIII', 0x02000001, 1 << 13, 0, 0, 0)); print(os.listxattr('capf'))`;
    await inMount(m, 'echo x > capf && chmod 666 capf');
    expect((await inMount(m, `python3 -c "${caps}"`)).stdout.trim()).toBe("['security.capability']");
    expect((await asNobody('echo more >> capf')).stdout).toBe('ok\n');
    expect((await inMount(m, 'getfattr -d -m - capf')).stdout).toBe('');
  });
});

describe('POSIX ACLs', () => {
  it('are enforced by the kernel, and the mode follows them both ways', async () => {
    await inMount(m, 'mkdir priv && echo secret > priv/s && chmod 700 priv');
    expect((await asNobody('cat priv/s')).stdout).toMatch(/denied/);
    await inMount(m, 'setfacl -m u:nobody:rx priv');
    expect((await asNobody('cat priv/s')).stdout).toBe('secret\nok\n');
    // The group class of the mode is the ACL's mask.
    expect((await inMount(m, 'stat -c %A priv')).stdout.trim()).toBe('drwxr-x---');
    // chmod sets the mask: the named entry is no longer effective.
    await inMount(m, 'chmod 700 priv');
    expect((await inMount(m, 'getfacl -cp priv | grep mask')).stdout.trim()).toBe('mask::---');
    expect((await asNobody('cat priv/s')).stdout).toMatch(/denied/);
    // An ACL the mode says all of is kept as the mode alone.
    await inMount(m, 'setfacl -b priv');
    expect((await inMount(m, 'getfattr -d -m - priv')).stdout).toBe('');
  });

  it("a directory's default ACL is what new files and directories in it get, instead of the umask", async () => {
    await inMount(m, 'mkdir lab && setfacl -d -m g:users:rwX lab');
    await inMount(m, 'umask 022; echo x > lab/new.txt; mkdir lab/sub; mkdir lab/sub/deeper');
    expect((await inMount(m, 'stat -c %A lab/new.txt lab/sub')).stdout).toBe('-rw-rw-r--\ndrwxrwxr-x\n');
    expect((await inMount(m, 'getfacl -cp lab/new.txt')).stdout).toBe('user::rw-\ngroup::r-x\t#effective:r--\ngroup:users:rwx\t#effective:rw-\nmask::rw-\nother::r--\n\n');
    expect((await inMount(m, 'getfacl -cp lab/sub/deeper')).stdout).toContain('default:group:users:rwx');
    // Without a default ACL the umask applies, as always.
    await inMount(m, 'umask 077; echo y > private.txt');
    expect((await inMount(m, 'stat -c %a private.txt')).stdout.trim()).toBe('600');
  });

  it('survive a restart with the extended attributes', async () => {
    await inMount(m, 'echo kept > kept.txt && setfattr -n user.checksum -v abc kept.txt && mkdir shared && setfacl -m g:users:rwx shared');
    const { root } = m;
    await m.stop();
    m = await mountProject({ root });
    expect((await inMount(m, 'getfattr --only-values -n user.checksum kept.txt')).stdout).toBe('abc');
    expect((await inMount(m, 'getfacl -cp shared | grep users')).stdout.trim()).toBe('group:users:rwx');
  });
});

describe('rsync -aHAX', () => {
  it('copies attributes, ACLs and hard links in, and the second run transfers nothing', async () => {
    const src = `${m.root}/rsync-src`;
    await sh('bash', ['-euo', 'pipefail', '-c', `mkdir -p ${src}/d && echo one > ${src}/d/a && echo two > ${src}/d/b && ln ${src}/d/a ${src}/d/hard && ln -s a ${src}/d/link && setfattr -n user.origin -v lab1 ${src}/d/a && setfacl -m g:users:rw ${src}/d/b && setfacl -d -m u:nobody:r ${src}/d`]);
    const first = await sh('rsync', ['-aHAX', `${src}/`, `${m.dir}/rs/`], { timeoutMs: 60_000 });
    expect(first.code).toBe(0);
    const second = await sh('rsync', ['-aHAX', '--itemize-changes', `${src}/`, `${m.dir}/rs/`], { timeoutMs: 60_000 });
    expect(second.code).toBe(0);
    expect(second.stdout).toBe('');
    expect((await inMount(m, 'getfattr --only-values -n user.origin rs/d/hard; echo; getfacl -cp rs/d/b | grep users')).stdout).toBe('lab1\ngroup:users:rw-\n');
  });
});
