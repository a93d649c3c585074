// Restores through the API show in the mount at once: the next read after the restore returns the
// restored bytes (including a different size), deleted paths come back, paths the snapshot did not
// have disappear. No content is copied: the mount reads the restored versions' objects. A change
// another process commits to the same home shows within seconds too, though the kernel may keep a
// file's attributes 10 s and its name 60 s: the mount looks for such changes every second. The kernel
// keeps directory listings too (read once, `git status` opens every directory): a restore still shows.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DaemonStatus } from '../daemon/daemon.js';
import { openLocalEngine } from '../engine/local.js';
import type { VersionRecord } from '../engine/types.js';
import { inMount, type MountedDir, mountProject, sh, waitFor } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject();
});

afterAll(async () => {
  await m?.dispose();
});

const p = (suffix: string) => `/v1/projects/${m.projectId}${suffix}`;

describe('restores seen through the mount', () => {
  it('snapshot restore: sizes, contents and the set of files change at once', async () => {
    await inMount(m, 'mkdir snap && printf "short\\n" > snap/a.txt && printf "keep\\n" > snap/b.txt');
    await m.idle();
    const snapshot = await m.api<{ snapshotId: string }>('POST', p('/fs/snapshots'), { message: 'before' });

    // Warm the kernel's caches with the new state: the restore must not be hidden behind them.
    await inMount(m, 'printf "a much longer second version\\n" > snap/a.txt && rm snap/b.txt && printf "new\\n" > snap/c.txt');
    await m.idle();
    await inMount(m, 'cat snap/a.txt snap/c.txt > /dev/null && stat snap/a.txt > /dev/null && ls snap > /dev/null');

    await m.api('POST', p(`/fs/snapshots/${snapshot.snapshotId}/restore`));
    const out = await inMount(m, 'cat snap/a.txt; cat snap/b.txt; ls snap');
    expect(out.stdout).toBe('short\nkeep\na.txt\nb.txt\n');
    const size = await inMount(m, 'stat -c %s snap/a.txt');
    expect(size.stdout.trim()).toBe('6');
    const gone = await sh('cat', [`${m.dir}/snap/c.txt`], { allowFail: true });
    expect(gone.code).not.toBe(0);
  });

  it('file restore: the previous version is what the next open reads', async () => {
    await inMount(m, 'printf "v1\\n" > one.txt');
    await m.idle();
    await inMount(m, 'sleep 0.2; printf "version two, longer\\n" > one.txt');
    await m.idle();
    await inMount(m, 'cat one.txt > /dev/null');
    const history = await m.history('one.txt');
    const first = history[history.length - 1] as VersionRecord;
    await m.api('POST', p('/history/restore'), { versionId: first.versionId });
    const out = await inMount(m, 'cat one.txt; stat -c %s one.txt');
    expect(out.stdout).toBe('v1\n3\n');
    // Writing after the restore builds on the restored content.
    await inMount(m, 'echo more >> one.txt');
    await m.idle();
    expect((await m.read('one.txt')).toString()).toBe('v1\nmore\n');
  });

  it('a change committed by another process on the same home: seen through the mount within seconds', async () => {
    await inMount(m, 'printf "mine\\n" > shared.txt');
    await m.idle();
    // The kernel now keeps the file's name, attributes and pages.
    expect((await inMount(m, 'cat shared.txt; stat -c %s shared.txt')).stdout).toBe('mine\n5\n');
    const other = await openLocalEngine({ home: m.home });
    try {
      const actor = { id: 'other-process', kind: 'local' as const, name: 'another process' };
      await other.engine.writeFile({ projectId: m.projectId, path: 'shared.txt', actor, content: Buffer.from('theirs, longer\n') });
      await other.engine.writeFile({ projectId: m.projectId, path: 'new-elsewhere.txt', actor, content: Buffer.from('new\n') });
    } finally {
      await other.close();
    }
    // Only stat: nothing that reaches the daemon's JS (which would look for changes on the way), and
    // well inside the kernel's 10 s attribute lifetime.
    const size = await waitFor(
      'the other process\'s change in the mount',
      async () => {
        const out = await inMount(m, 'stat -c %s shared.txt');
        return out.stdout.trim() === '15' ? out.stdout.trim() : undefined;
      },
      6_000,
    );
    expect(size).toBe('15');
    expect((await inMount(m, 'cat shared.txt new-elsewhere.txt')).stdout).toBe('theirs, longer\nnew\n');
  });

  it('a listing read again comes from the kernel, and a restore behind the mount still shows in it', async () => {
    await inMount(m, 'mkdir listed && printf "1\\n" > listed/one && printf "2\\n" > listed/two');
    await m.idle();
    const listings = async () => {
      const doc = await m.api<DaemonStatus>('GET', '/v1/daemon/status');
      return doc.projects.find((p) => p.projectId === m.projectId)!.mount!.ops['readdir']?.count ?? 0;
    };
    expect((await inMount(m, 'ls listed')).stdout).toBe('one\ntwo\n');
    const before = await listings();
    expect((await inMount(m, 'ls listed; ls listed; ls -a listed | wc -l')).stdout).toBe('one\ntwo\none\ntwo\n4\n');
    expect(await listings()).toBe(before);

    const snapshot = await m.api<{ snapshotId: string }>('POST', p('/fs/snapshots'), { message: 'listed' });
    await inMount(m, 'rm listed/two && printf "3\\n" > listed/three');
    await m.idle();
    expect((await inMount(m, 'ls listed')).stdout).toBe('one\nthree\n');
    await m.api('POST', p(`/fs/snapshots/${snapshot.snapshotId}/restore`));
    expect((await inMount(m, 'ls listed')).stdout).toBe('one\ntwo\n');
  });

  it('a directory that goes or comes with a file changed behind the mount goes or comes in the listings above it', async () => {
    // Seed 43000 path 37 of bench/sync-model.ts: another workstation's `rm -r c` reached the mount,
    // and its root, listed before, still listed `c` while lstat said ENOENT. The change named `c/a`,
    // and only `c/a` and `c` were dropped from the kernel's caches: the root's listing stayed, and so
    // did its attributes in native/fuse, whose mtime would have had the kernel drop that listing. A
    // directory is there for the files below it: any directory above a changed file may go or come.
    // Written behind the mount, so that the directories are there for their files only (`mkdir`
    // through the mount keeps a directory of its own, which stays when its files go).
    for (const [path, data] of [['top/gone/f', '1\n'], ['top/deep/er/f', '2\n'], ['top/stays', '3\n']]) await m.api('PUT', p(`/fs/write?path=${encodeURIComponent(path!)}`), data);
    const listings = async () => {
      const doc = await m.api<DaemonStatus>('GET', '/v1/daemon/status');
      return doc.projects.find((p) => p.projectId === m.projectId)!.mount!.ops['readdir']?.count ?? 0;
    };
    // The kernel lists `top` from its cache: the mount has taken these writes (each dropped the
    // cached listing of its parent), and another `ls` asks it nothing.
    await waitFor('the listing of top from the kernel', async () => {
      const before = await listings();
      const out = await inMount(m, 'ls top; ls top/deep');
      return out.stdout === 'deep\ngone\nstays\ner\n' && (await listings()) === before ? true : undefined;
    });
    await m.api('POST', p('/fs/delete'), { path: 'top/gone/f' });
    await m.api('POST', p('/fs/delete'), { path: 'top/deep/er/f' });
    await m.api('PUT', p('/fs/write?path=top%2Fnew%2Fer%2Ff'), 'new\n');
    // Once the mount has taken the changes (the name `gone`, the parent of a removed file, finds
    // nothing; `new/er/f` is there), what the kernel lists and finds in `top` has them too. Read right
    // away: a second after the kernel last asked for a directory's attributes it asks again, and a
    // changed mtime drops its copy of the listing (the attributes of `deep` go the same way).
    await waitFor('the mount has taken the changes', async () => ((await inMount(m, '[ ! -e top/gone ] && [ -f top/new/er/f ] && echo yes')).stdout === 'yes\n' ? true : undefined));
    const found = 'for n in deep gone new stays; do if [ -e top/$n ]; then echo $n; fi; done';
    expect((await inMount(m, `ls top; ${found}; ls top/new`)).stdout).toBe('new\nstays\nnew\nstays\ner\n');
  });

  it('a directory whose last file goes behind the mount stays while it holds an unversioned file', async () => {
    // The other way a listing and lookup disagreed: the mount lists its backing directory's names
    // too, and `keep/.a.swp` (ignored, so kept there) made one `keep/`. With `keep/a` gone elsewhere
    // (`rm keep/a` on another workstation, pulled), the root listed `keep` and lookup found nothing:
    // the swap file was out of reach. On a watching workstation the directory stays on disk with it.
    await m.api('PUT', p('/fs/write?path=keep%2Fa'), 'a\n');
    await waitFor('keep/a in the mount', async () => ((await inMount(m, '[ -f keep/a ] && echo yes')).stdout === 'yes\n' ? true : undefined));
    await inMount(m, 'echo swap > keep/.a.swp');
    await m.api('POST', p('/fs/delete'), { path: 'keep/a' });
    await waitFor('keep/a gone from the mount', async () => ((await inMount(m, '[ ! -e keep/a ] && echo gone')).stdout === 'gone\n' ? true : undefined));
    expect((await inMount(m, 'ls | grep -x keep; stat -c %F keep; ls -A keep; cat keep/.a.swp')).stdout).toBe('keep\ndirectory\n.a.swp\nswap\n');
    // A directory of the mount's own now: files written in it are versioned, and it goes with rmdir.
    await inMount(m, 'echo b > keep/b');
    await m.idle();
    expect((await m.read('keep/b')).toString()).toBe('b\n');
    await inMount(m, 'rm keep/b keep/.a.swp && rmdir keep');
    expect((await inMount(m, 'ls')).stdout).not.toMatch(/^keep$/m);
  });
});
