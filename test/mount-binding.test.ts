// The FUSE binding on its own (native/fuse + fuse-lowlevel.ts), served by this test process with a tiny
// in-memory operation table: the safety timeout and the kernel cache invalidation, which the mount's
// own tests do not reach. Everything that touches the mount runs on the thread pool (fs/promises), never
// synchronously on the thread that serves it.
import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FuseMount, type FuseOps, type FuseStat, loadFuse, mountFuse } from '../daemon/mount/fuse-binding.js';
import { detachMount } from '../daemon/mount/stale-mount.js';

let root: string;
let fuse: FuseMount | null = null;
let second: FuseMount | null = null;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-binding-'));
});

afterEach(async () => {
  if (fuse !== null) await fuse.unmount().catch(() => detachMount(join(root, 'mnt')));
  if (second !== null) await second.unmount().catch(() => detachMount(join(root, 'mnt2')));
  fuse = null;
  second = null;
  await rm(root, { recursive: true, force: true });
});

const ENOENT = -2;

/** `mtime` in ms, and the nanoseconds past it */
function fileStat(size: number, mtime: number, ns = 0): FuseStat {
  const time = { ms: mtime, ns };
  return { mode: 0o100644, uid: 0, gid: 0, size, nlink: 1, blksize: 4096, blocks: Math.ceil(size / 512), atime: time, mtime: time, ctime: time };
}

/** One file `/data` with `content`; `/hang` is a file whose getattr never answers. */
function tinyOps(files: { content: Buffer; mtime: number; ns?: number }): FuseOps {
  const dir: FuseStat = { ...fileStat(4096, 0), mode: 0o40755, nlink: 2 };
  return {
    getattr: (path, cb) => {
      if (path === '/') cb(0, dir);
      else if (path === '/data') cb(0, fileStat(files.content.length, files.mtime, files.ns));
      else if (path !== '/hang') cb(ENOENT);
    },
    readdir: (_path, cb) => cb(0, ['.', '..', 'data']),
    open: (_path, _flags, cb) => cb(0, 1),
    create: (_path, _mode, cb) => cb(-30),
    read: (_path, _fd, buf, len, pos, cb) => cb(files.content.copy(buf, 0, pos, Math.min(pos + len, files.content.length))),
    write: (_path, _fd, _buf, _len, _pos, cb) => cb(-30),
    release: (_path, _fd, cb) => cb(0),
  };
}

async function mountTiny(files: { content: Buffer; mtime: number; ns?: number }, options: { attrTimeoutS: number; opTimeoutMs: number }, name = 'mnt'): Promise<string> {
  const mnt = join(root, name);
  await mkdir(mnt, { recursive: true });
  const native = await loadFuse();
  const mounted = await mountFuse(native, mnt, tinyOps(files), {
    options: ['fsname=strata-test', 'subtype=strata-test'],
    attrTimeoutS: options.attrTimeoutS,
    entryTimeoutS: options.attrTimeoutS,
    dirAttrTimeoutS: options.attrTimeoutS,
    maxWrite: 131_072,
    opTimeoutMs: options.opTimeoutMs,
    unmount: detachMount,
  });
  if (name === 'mnt') fuse = mounted;
  else second = mounted;
  return mnt;
}

describe('native FUSE binding', () => {
  it('a request the operations never answer fails with EIO after the safety timeout, and the mount keeps serving', async () => {
    const files = { content: Buffer.from('hello\n'), mtime: 1_700_000_000_000 };
    const mnt = await mountTiny(files, { attrTimeoutS: 0, opTimeoutMs: 1_000 });
    const started = Date.now();
    const error = await stat(join(mnt, 'hang')).then(
      () => null,
      (e: NodeJS.ErrnoException) => e,
    );
    expect(error?.code).toBe('EIO');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await readFile(join(mnt, 'data'), 'utf8')).toBe('hello\n');
  }, 20_000);

  it('two mounts served by one process answer each with its own attributes', async () => {
    const a = await mountTiny({ content: Buffer.alloc(3), mtime: 1_700_000_000_000 }, { attrTimeoutS: 0, opTimeoutMs: 0 });
    const b = await mountTiny({ content: Buffer.alloc(70_000), mtime: 1_600_000_000_000, ns: 123_457 }, { attrTimeoutS: 0, opTimeoutMs: 0 }, 'mnt2');
    const [sa, sb] = await Promise.all([stat(join(a, 'data'), { bigint: true }), stat(join(b, 'data'), { bigint: true })]);
    expect([sa.size, sa.mtimeNs]).toEqual([3n, 1_700_000_000_000_000_000n]);
    // To the nanosecond: one double of ms showed ...000123456 (issue 39 item 3).
    expect([sb.size, sb.mtimeNs]).toEqual([70_000n, 1_600_000_000_000_123_457n]);
    expect((await readFile(join(b, 'data'))).length).toBe(70_000);
  }, 20_000);

  it('invalidate() drops the kernel cache: a changed size shows at once even with a long attribute timeout', async () => {
    const files = { content: Buffer.from('short\n'), mtime: 1_700_000_000_000 };
    const mnt = await mountTiny(files, { attrTimeoutS: 60, opTimeoutMs: 0 });
    expect((await stat(join(mnt, 'data'))).size).toBe(6);
    files.content = Buffer.from('a longer content\n');
    files.mtime += 1_000;
    // Cached for 60 s: the kernel does not ask. (A read would: it invalidates the cached atime.)
    expect((await stat(join(mnt, 'data'))).size).toBe(6);
    await fuse?.invalidate('data');
    expect((await stat(join(mnt, 'data'))).size).toBe(17);
    expect(await readFile(join(mnt, 'data'), 'utf8')).toBe('a longer content\n');
  }, 20_000);
});
