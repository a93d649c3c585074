// The mount as POSIX tools see it (issue 15). Modes and owners are kept: a file created 0151 is 0151,
// chmod (setuid, setgid, sticky included) and chown change them, a rename keeps them, a new file at a
// removed file's name starts fresh, and all of it holds across a restart of the mount. A name over 255 bytes is ENAMETOOLONG for every call, as
// on any filesystem (a 255-byte one works). Directories: nlink is 2 plus the subdirectories
// (versioned ones, ignored ones kept in the backing directory, `.strata/` in the root); a directory's
// mtime and ctime move when an entry is added, removed or renamed in it, and not when a file in it is
// rewritten, and utimensat sets them; a directory that exists only in the backing directory answers with that filesystem's own
// attributes (its mode after chmod, its nlink).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject();
});

afterAll(async () => {
  await m?.dispose();
});

/** `stat -c FORMAT` of each path, inside the mount. */
async function stat(format: string, ...paths: string[]): Promise<string[]> {
  const result = await inMount(m, `stat -c '${format}' ${paths.map((p) => `'${p}'`).join(' ')}`);
  return result.stdout.trim().split('\n');
}

describe('the mount, as POSIX tools see it', () => {
  it('count their subdirectories in nlink', async () => {
    await inMount(m, 'mkdir -p d/a d/b/c d/.git/objects && touch d/f.txt d/b/g.txt');
    // d: a, b and the ignored .git (backing); d/b: c; d/a: none.
    expect(await stat('%h', 'd', 'd/a', 'd/b')).toEqual(['5', '2', '3']);
    const [root] = await stat('%h', '.');
    // the root: d and .strata
    expect(root).toBe('4');
    await inMount(m, 'rmdir d/a');
    expect(await stat('%h', 'd')).toEqual(['4']);
  }, 60_000);

  it('change mtime and ctime when entries change, not when a file is rewritten', async () => {
    await inMount(m, 'mkdir e && echo one > e/x.txt');
    // Full resolution (the mount keeps milliseconds): each step is a new process, so later.
    const times = async () => (await stat('%y|%z', 'e'))[0]!;
    const afterCreate = await times();
    await inMount(m, 'echo two > e/x.txt');
    expect(await times()).toBe(afterCreate);
    await inMount(m, 'touch e/y.txt');
    const afterAdd = await times();
    expect(afterAdd).not.toBe(afterCreate);
    await inMount(m, 'mv e/y.txt e/z.txt');
    const afterRename = await times();
    expect(afterRename).not.toBe(afterAdd);
    await inMount(m, 'rm e/z.txt');
    expect(await times()).not.toBe(afterRename);
    // utimensat on the directory (tar and rsync -t restore a directory's time last).
    await inMount(m, "touch -m -d '2001-02-03 04:05:06 UTC' e && touch -a -d '2002-03-04 05:06:07 UTC' e");
    expect(await stat('%Y %X', 'e')).toEqual([`${Date.UTC(2001, 1, 3, 4, 5, 6) / 1000} ${Date.UTC(2002, 2, 4, 5, 6, 7) / 1000}`]);
    // A directory made again at a removed one's name starts with times of its own.
    await inMount(m, "mkdir again && touch -a -d '2002-03-04 05:06:07 UTC' again && rmdir again && mkdir again");
    expect(Number((await stat('%X', 'again'))[0])).toBeGreaterThan(Date.UTC(2020, 0, 1) / 1000);
    // A file keeps an atime of its own (in memory), past 2038 too, whether it has local state or not.
    await inMount(m, "touch -a -d '2002-03-04 05:06:07 UTC' e/x.txt && touch -m -d '2106-02-07 06:28:16 UTC' e/x.txt");
    const expected = `${Date.UTC(2106, 1, 7, 6, 28, 16) / 1000} ${Date.UTC(2002, 2, 4, 5, 6, 7) / 1000}`;
    expect(await stat('%Y %X', 'e/x.txt')).toEqual([expected]);
    await m.idle();
    expect(await stat('%Y %X', 'e/x.txt')).toEqual([expected]);
  }, 60_000);

  it('that exist only in the backing directory keep the mode chmod gives them', async () => {
    await inMount(m, 'mkdir -p .git/hooks && chmod 700 .git/hooks');
    expect(await stat('%a %h', '.git/hooks')).toEqual(['700 2']);
  }, 60_000);

  it('refuse a name of 256 bytes with ENAMETOOLONG in every call, and take one of 255', async () => {
    const max = 'n'.repeat(255);
    const over = `${max}x`;
    const script = `
import errno, os
out = []
def code(f):
    try:
        f()
        return 0
    except OSError as e:
        return errno.errorcode[e.errno]
open('${max}', 'w').write('ok')
out.append(code(lambda: os.stat('${max}')))
out.append(code(lambda: open('${over}', 'w')))
out.append(code(lambda: os.stat('${over}')))
out.append(code(lambda: os.mkdir('${over}')))
out.append(code(lambda: os.unlink('${over}')))
out.append(code(lambda: os.rename('${max}', '${over}')))
out.append(code(lambda: os.symlink('x', '${over}')))
out.append(code(lambda: os.link('${max}', '${over}')))
out.append(code(lambda: os.unlink('${max}')))
print(' '.join(map(str, out)))
`;
    const result = await inMount(m, `python3 -c "$(cat <<'PY'
${script}
PY
)"`);
    expect(result.stdout.trim()).toBe('0 ENAMETOOLONG ENAMETOOLONG ENAMETOOLONG ENAMETOOLONG ENAMETOOLONG ENAMETOOLONG ENAMETOOLONG 0');
  }, 60_000);

  it('move the ctime of a file on chown and utimensat, also when it has no local state, and of a directory', async () => {
    await inMount(m, 'echo c > ctime.txt');
    await m.idle();
    const ctime = async () => (await stat('%z', 'ctime.txt'))[0]!;
    const before = await ctime();
    await inMount(m, 'chown 4242 ctime.txt');
    const afterChown = await ctime();
    expect(afterChown).not.toBe(before);
    await inMount(m, "touch -m -d '2001-01-01 00:00:00 UTC' ctime.txt");
    expect(await ctime()).not.toBe(afterChown);
    // A directory's too, on chmod and chown.
    await inMount(m, 'mkdir ctime-dir');
    const dirCtime = async () => (await stat('%z', 'ctime-dir'))[0]!;
    const made = await dirCtime();
    await inMount(m, 'chmod 700 ctime-dir');
    const afterChmod = await dirCtime();
    expect(afterChmod).not.toBe(made);
    await inMount(m, 'chown 4242 ctime-dir');
    expect(await dirCtime()).not.toBe(afterChmod);
  }, 60_000);

  it('show a file removed while open with nlink 0 to its open descriptor', async () => {
    const out = await inMount(m, `python3 -c "
import os
fd = os.open('open-then-gone.txt', os.O_CREAT | os.O_RDWR, 0o644)
os.write(fd, b'still here')
print(os.fstat(fd).st_nlink)
os.unlink('open-then-gone.txt')
print(os.fstat(fd).st_nlink, os.pread(fd, 10, 0).decode())
os.close(fd)"`);
    expect(out.stdout).toBe('1\n0 still here\n');
  }, 60_000);

  it('let other users in, owning what they create, with the kernel checking permissions', async () => {
    // The daemon runs as root here: the mount is allow_other + default_permissions (sharing.ts).
    const as = (uid: number, command: string) => inMount(m, `setpriv --reuid=${uid} --regid=${uid} --clear-groups sh -c '${command}' 2>/dev/null && echo rc=0 || echo rc=$?`);
    await inMount(m, 'mkdir -m 1777 common && echo root-only > common/root.key && chmod 600 common/root.key && mkdir -m 1777 common/.git');
    expect((await as(4242, 'echo mine > common/u.txt && mkdir common/udir && echo ign > common/.git/u.lock')).stdout).toContain('rc=0');
    expect(await stat('%u %g', 'common/u.txt', 'common/udir', 'common/.git/u.lock')).toEqual(['4242 4242', '4242 4242', '4242 4242']);
    // 0600 and root's: another user cannot read it; the sticky directory keeps them from removing it.
    expect((await as(4242, 'cat common/root.key')).stdout).toContain('rc=1');
    expect((await as(4242, 'rm -f common/root.key')).stdout).toContain('rc=1');
    // chown is root's (EPERM for a user, even on their own file); chmod is the owner's.
    expect((await as(4242, 'chown 4343 common/u.txt')).stdout).toContain('rc=1');
    expect((await as(4242, 'chmod 640 common/u.txt')).stdout).toContain('rc=0');
    expect((await as(4343, 'chmod 666 common/u.txt')).stdout).toContain('rc=1');
    expect(await stat('%a %u', 'common/u.txt')).toEqual(['640 4242']);
    await m.idle();
    expect((await m.read('common/u.txt')).toString()).toBe('mine\n');
  }, 60_000);

  it('make FIFOs, sockets and device nodes that work, unversioned, across a restart', async () => {
    await inMount(
      m,
      `mkdir -p nodes && mkfifo -m 0640 nodes/pipe && mknod nodes/null c 1 3 && chmod 666 nodes/null
python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.bind('nodes/sock')"
(echo through > nodes/pipe &) && read line < nodes/pipe && echo "$line" > nodes/got.txt
mv nodes/pipe nodes/pipe2`,
    );
    const expected = ['fifo 640', 'character special file 666 1,3', 'socket', 'regular file'];
    const check = async () => {
      expect(await stat('%F %a', 'nodes/pipe2')).toEqual([expected[0]]);
      expect(await stat('%F %a %t,%T', 'nodes/null')).toEqual([expected[1]]);
      expect(await stat('%F', 'nodes/sock', 'nodes/got.txt')).toEqual(expected.slice(2));
    };
    await check();
    expect((await inMount(m, 'ls nodes | sort | tr "\\n" " "')).stdout).toBe('got.txt null pipe2 sock ');
    await m.idle();
    expect((await m.read('nodes/got.txt')).toString()).toBe('through\n');
    expect(await m.stat('nodes/pipe2')).toBeNull();
    expect(await m.stop()).toBe(0);
    m = await mountProject({ root: m.root });
    await check();
    await inMount(m, 'rm nodes/pipe2 nodes/null nodes/sock');
    expect((await inMount(m, 'ls nodes')).stdout).toBe('got.txt\n');
  }, 120_000);

  it('version symbolic links as links: ln -s, tar with links, renames, ignored names, a restart', async () => {
    await inMount(
      m,
      `mkdir -p links && echo target > links/t.txt && ln -s t.txt links/rel && ln -s /nowhere/at/all links/dangling
ln -s ../links links/dirlink && mkdir -p .git && ln -s ../links/t.txt .git/ignored-link
ln -s t.txt links/moving && mv links/moving links/moved
src=$(mktemp -d) && mkdir -p "$src/pkg/lib" && echo so > "$src/pkg/lib/libx.so.1" && ln -s libx.so.1 "$src/pkg/lib/libx.so" && ln -s lib "$src/pkg/lib64"
tar -C "$src" -cf "$src.tar" pkg && tar -xf "$src.tar" -C links && diff -r --no-dereference "$src/pkg" links/pkg && rm -rf "$src" "$src.tar"`,
    );
    const expect_ = ['symbolic link t.txt', 'symbolic link /nowhere/at/all', 'symbolic link ../links', 'symbolic link ../links/t.txt', 'symbolic link t.txt', 'symbolic link libx.so.1', 'symbolic link lib'];
    const paths = ['links/rel', 'links/dangling', 'links/dirlink', '.git/ignored-link', 'links/moved', 'links/pkg/lib/libx.so', 'links/pkg/lib64'];
    const check = async () => {
      const shown = (await inMount(m, `for p in ${paths.join(' ')}; do echo "$(stat -c %F "$p") $(readlink "$p")"; done`)).stdout.trim().split('\n');
      expect(shown).toEqual(expect_);
      // The kernel follows them: through a versioned link to a versioned file.
      expect((await inMount(m, 'cat links/rel links/dirlink/t.txt links/pkg/lib64/libx.so')).stdout).toBe('target\ntarget\nso\n');
    };
    await check();
    await m.idle();
    for (const path of ['links/rel', 'links/moved', 'links/pkg/lib/libx.so']) {
      const entry = await m.stat(path);
      expect(entry?.symlink).toBe(true);
    }
    expect((await m.read('links/dangling')).toString()).toBe('/nowhere/at/all');
    expect(await m.stat('links/moving')).toBeNull();
    expect(await m.stop()).toBe(0);
    m = await mountProject({ root: m.root });
    await check();
    // Replaced by a file, then removed: the history has both.
    await inMount(m, 'rm links/rel && echo now-a-file > links/rel && rm links/dangling');
    await m.idle();
    expect((await m.stat('links/rel'))?.symlink).toBe(false);
    expect(await m.stat('links/dangling')).toBeNull();
  }, 120_000);

  it('keep modes and owners through chmod, chown and renames, and across a restart', async () => {
    await inMount(
      m,
      `umask 0
python3 -c "import os; os.close(os.open('odd.txt', os.O_CREAT | os.O_WRONLY, 0o151))"
umask 022
echo secret > secret.key && chmod 600 secret.key
echo run > tool.sh && chmod 4755 tool.sh
mkdir -m 0700 private && mkdir shared && chmod 1777 shared && chmod 2750 private
echo data > owned.txt && chown 1234:5678 owned.txt
mkdir -p tree/sub && echo x > tree/sub/f.txt && chmod 640 tree/sub/f.txt && chmod 711 tree/sub
mv tree moved && mv owned.txt owned2.txt
echo gone > gone.txt && chmod 600 gone.txt && rm gone.txt && echo again > gone.txt
python3 -c "
import os
fd = os.open('tarlike.txt', os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
os.write(fd, b'kept in C until the close')
os.fchmod(fd, 0o640)
os.close(fd)"
mkdir lab && chown 0:5678 lab && chmod 2775 lab && echo x > lab/made.txt && mkdir lab/sub`,
    );
    // tarlike.txt: created 0600 and set to 0640 while its bytes were still kept in C (write-behind).
    // lab is setgid: what is made in it takes its group, a directory the setgid bit too.
    const expected = ['151 0 0', '600 0 0', '4755 0 0', '2750 0 0', '1777 0 0', '644 1234 5678', '711 0 0', '640 0 0', '644 0 0', '640 0 0', '644 0 5678', '2755 0 5678'];
    const paths = ['odd.txt', 'secret.key', 'tool.sh', 'private', 'shared', 'owned2.txt', 'moved/sub', 'moved/sub/f.txt', 'gone.txt', 'tarlike.txt', 'lab/made.txt', 'lab/sub'];
    expect(await stat('%a %u %g', ...paths)).toEqual(expected);
    await m.idle();
    // The exec bit is versioned: tool.sh is executable in its history, secret.key is not.
    expect((await m.stat('tool.sh'))?.executable).toBe(true);
    expect((await m.stat('secret.key'))?.executable).toBe(false);
    expect(await m.stop()).toBe(0);
    m = await mountProject({ root: m.root });
    expect(await stat('%a %u %g', ...paths)).toEqual(expected);
  }, 120_000);

  it('keep the times tools set (touch -d, tar xp, cp -p, a rename) across a restart', async () => {
    await inMount(
      m,
      `echo a > touched.txt && touch -d '2020-01-02 03:04:05' touched.txt
touch -a -d '2021-02-03 04:05:06' touched.txt
d=$(mktemp -d) && mkdir "$d/src" && echo t > "$d/src/from-tar.txt" && touch -d '2019-05-06 07:08:09' "$d/src/from-tar.txt"
tar cf "$d/t.tar" -C "$d" src && tar xpf "$d/t.tar" && cp -p "$d/src/from-tar.txt" copied.txt && rm -rf "$d"
echo r > renamed-from.txt && touch -d '2018-03-04 05:06:07' renamed-from.txt`,
    );
    await m.idle();
    // an entry with no local state left: its times are the ones kept for its version
    await inMount(m, `mv renamed-from.txt renamed.txt && echo fresh > fresh.txt`);
    await m.idle();
    const paths = ['touched.txt', 'src/from-tar.txt', 'copied.txt', 'renamed.txt'];
    const expected = ['2020-01-02 03:04:05 2021-02-03 04:05:06', '2019-05-06 07:08:09', '2019-05-06 07:08:09', '2018-03-04 05:06:07'];
    const shown = async () => {
      const [touched, ...rest] = await stat('%Y', ...paths);
      const [atime] = await stat('%X', 'touched.txt');
      const date = (seconds: string) => new Date(Number(seconds) * 1000).toISOString().slice(0, 19).replace('T', ' ');
      return [`${date(touched!)} ${date(atime!)}`, ...rest.map(date)];
    };
    // touch -d reads local time: compare with what the same dates are in this process's zone
    const local = (text: string) => new Date(text.replace(' ', 'T')).toISOString().slice(0, 19).replace('T', ' ');
    const wanted = expected.map((line) => line.replace(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/g, local));
    expect(await shown()).toEqual(wanted);
    const [freshBefore] = await stat('%Y', 'fresh.txt');
    expect(await m.stop()).toBe(0);
    m = await mountProject({ root: m.root });
    expect(await shown()).toEqual(wanted);
    // a file written through the mount shows its version's time: within seconds of the write
    const [freshAfter] = await stat('%Y', 'fresh.txt');
    expect(Math.abs(Number(freshAfter) - Number(freshBefore))).toBeLessThanOrEqual(3);
  }, 120_000);
});
