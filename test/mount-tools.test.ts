// Mount mode with real tools: every test drives `cp`, `dd`, `sed -i`, `mv`, `rsync`, `tar`, `git`,
// python… against a real FUSE mount served by `strata mount` in a child process, then checks what the
// engine recorded over the daemon's HTTP API. The mount is unmounted in afterAll whatever happened.

import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject, sh } from './mount-harness.js';

let m: MountedDir;
let scratch: string;

beforeAll(async () => {
  m = await mountProject();
  scratch = await mkdtemp(join(tmpdir(), 'strata-mount-src-'));
});

afterAll(async () => {
  await m?.dispose();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');

describe('strata mount with real tools', () => {
  it('cp, cat, append, dd at an offset and truncate: one version per completed write', async () => {
    await writeFile(join(scratch, 'in.txt'), 'hello\n');
    await inMount(m, `mkdir basic && cp ${scratch}/in.txt basic/a.txt && cat basic/a.txt`);
    await m.idle();
    expect((await m.read('basic/a.txt')).toString()).toBe('hello\n');
    expect(await m.history('basic/a.txt')).toHaveLength(1);

    await inMount(m, 'sleep 0.3; echo world >> basic/a.txt');
    await m.idle();
    expect((await m.read('basic/a.txt')).toString()).toBe('hello\nworld\n');

    await inMount(m, 'sleep 0.3; printf XY | dd of=basic/a.txt bs=1 seek=2 conv=notrunc status=none');
    await m.idle();
    expect((await m.read('basic/a.txt')).toString()).toBe('heXYo\nworld\n');

    await inMount(m, 'sleep 0.3; truncate -s 3 basic/a.txt');
    await m.idle();
    expect((await m.read('basic/a.txt')).toString()).toBe('heX');
    const history = await m.history('basic/a.txt');
    expect(history.map((v) => v.size)).toEqual([3, 12, 12, 6]);
    expect(history.every((v) => v.kind === 'write')).toBe(true);
  });

  it('every close that changed content is a version, however quickly the next write follows (issue 13 item 9)', async () => {
    await inMount(m, 'mkdir closes && cd closes && echo v1 > a.m; echo v2 > a.m; echo v3 >> a.m; printf x > b.m; printf x > b.m');
    await m.idle();
    const versions = await m.history('closes/a.m');
    const contents = await Promise.all(
      versions.map(async (v) => {
        const response = await fetch(`${m.url}/v1/projects/${m.projectId}/fs/read?versionId=${v.versionId}`, { headers: { authorization: `Bearer ${m.apiKey}` } });
        return response.text();
      }),
    );
    expect(contents).toEqual(['v2\nv3\n', 'v2\n', 'v1\n']);
    // the same content closed again is no new version
    expect(await m.history('closes/b.m')).toHaveLength(1);
  });

  it('large binary files round-trip byte for byte (cp in, cp out, random reads)', async () => {
    const data = Buffer.alloc(3 * 1024 * 1024 + 12345);
    for (let i = 0; i < data.length; i += 4096) data.writeUInt32LE((i * 2654435761) >>> 0, i);
    await writeFile(join(scratch, 'big.bin'), data);
    const out = await inMount(
      m,
      `mkdir big && cp ${scratch}/big.bin big/b.bin && cp big/b.bin ${scratch}/back.bin && sha256sum big/b.bin ${scratch}/back.bin && dd if=big/b.bin bs=1 skip=2000000 count=4 status=none | xxd -p`,
    );
    const sums = out.stdout.trim().split('\n').slice(0, 2).map((line) => line.split(/\s+/)[0]);
    expect(sums).toEqual([sha(data), sha(data)]);
    expect(out.stdout.trim().split('\n')[2]).toBe(data.subarray(2000000, 2000004).toString('hex'));
    await m.idle();
    expect(sha(await m.read('big/b.bin'))).toBe(sha(data));
  });

  it('sed -i, mv over an existing file and os.replace give exactly one version of the target', async () => {
    await inMount(m, 'mkdir edit && printf "one\\n" > edit/s.txt && printf "old\\n" > edit/t.txt');
    await m.idle();
    await inMount(m, "sed -i 's/one/two/' edit/s.txt");
    await inMount(m, 'printf "new\\n" > edit/t.new && mv edit/t.new edit/t.txt');
    await inMount(
      m,
      `python3 -c "
import os
with open('edit/p.txt.tmp', 'w') as f:
    f.write('atomic\\n')
os.replace('edit/p.txt.tmp', 'edit/p.txt')
"`,
    );
    await m.idle();
    expect((await m.read('edit/s.txt')).toString()).toBe('two\n');
    expect(await m.history('edit/s.txt')).toHaveLength(2);
    expect((await m.read('edit/t.txt')).toString()).toBe('new\n');
    expect((await m.history('edit/t.txt')).map((v) => v.kind)).toEqual(['write', 'write']);
    expect(await m.history('edit/t.new')).toHaveLength(0);
    expect((await m.history('edit/p.txt')).map((v) => v.size)).toEqual([7]);
    expect(await m.history('edit/p.txt.tmp')).toHaveLength(0);
    const listing = await inMount(m, 'ls -A edit');
    expect(listing.stdout.split('\n').filter(Boolean).sort()).toEqual(['p.txt', 's.txt', 't.txt']);
  });

  it('mv of a versioned file records a rename: the old path gets a tombstone, the new one the same content', async () => {
    await inMount(m, 'mkdir ren && printf "keep\\n" > ren/a.txt');
    await m.idle();
    await inMount(m, 'mv ren/a.txt ren/b.txt && test ! -e ren/a.txt && cat ren/b.txt');
    await m.idle();
    const a = await m.history('ren/a.txt');
    expect(a.map((v) => v.kind)).toEqual(['delete', 'write']);
    const b = await m.history('ren/b.txt');
    expect(b).toHaveLength(1);
    expect(b[0]!.contentHash).toBe(a[1]!.contentHash);
  });

  it('rsync -a and tar x of a tree: every file versioned once, with its exec bit', async () => {
    const src = join(scratch, 'tree');
    await mkdir(join(src, 'sub', 'deep'), { recursive: true });
    for (let i = 0; i < 30; i++) await writeFile(join(src, 'sub', `f${i}.txt`), `file ${i}\n`);
    await writeFile(join(src, 'sub', 'deep', 'run.sh'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
    await sh('tar', ['-C', scratch, '-cf', join(scratch, 'tree.tar'), 'tree']);
    await inMount(m, `rsync -a ${src}/ rs/ && mkdir tx && tar -C tx -xf ${scratch}/tree.tar && diff -r ${src} rs && diff -r ${src} tx/tree`);
    await m.idle();
    for (const base of ['rs', 'tx/tree']) {
      expect((await m.read(`${base}/sub/f7.txt`)).toString()).toBe('file 7\n');
      expect(await m.history(`${base}/sub/f7.txt`)).toHaveLength(1);
      const script = await m.stat(`${base}/sub/deep/run.sh`);
      expect(script?.executable).toBe(true);
    }
    // rsync writes `.f7.txt.XXXXXX` and renames it into place: none of those temp names is versioned.
    const page = await m.api<{ items: Array<{ path: string }> }>('GET', `/v1/projects/${m.projectId}/history?limit=1000`);
    expect(page.items.filter((v) => v.path.startsWith('rs/') && v.path.split('/').pop()!.startsWith('.'))).toEqual([]);
  });

  it('git clone into the mount works; the worktree is versioned, .git/ is not', async () => {
    const repo = join(scratch, 'repo');
    await mkdir(repo);
    await writeFile(join(repo, 'main.py'), 'print("hi")\n');
    const git = (args: string[], cwd: string) => sh('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd });
    await git(['init', '-q'], repo);
    await git(['add', '.'], repo);
    await git(['commit', '-qm', 'one'], repo);
    await inMount(m, `git clone -q ${repo} clone && cd clone && git status --porcelain && git log --oneline | wc -l`);
    const status = await inMount(m, 'cd clone && git status --porcelain');
    expect(status.stdout).toBe('');
    await inMount(m, 'cd clone && echo "print(2)" >> main.py && git -c user.email=t@example.com -c user.name=t commit -qam two && git log --oneline | wc -l');
    await m.idle();
    expect((await m.read('clone/main.py')).toString()).toBe('print("hi")\nprint(2)\n');
    const page = await m.api<{ items: Array<{ path: string }> }>('GET', `/v1/projects/${m.projectId}/history?limit=1000`);
    expect(page.items.some((v) => v.path.startsWith('clone/.git'))).toBe(false);
  });

  it('chmod +x is a version with the same content; mkdir/rmdir keep empty directories', async () => {
    await inMount(m, 'mkdir -p modes/empty/inner && printf "#!/bin/sh\\n" > modes/x.sh');
    await m.idle();
    await inMount(m, 'chmod +x modes/x.sh && test -x modes/x.sh');
    await m.idle();
    const versions = await m.history('modes/x.sh');
    expect(versions.map((v) => v.executable)).toEqual([true, false]);
    expect(versions[0]!.contentHash).toBe(versions[1]!.contentHash);
    const rmdirNonEmpty = await sh('rmdir', [join(m.dir, 'modes/empty')], { allowFail: true });
    expect(rmdirNonEmpty.code).not.toBe(0);
    expect(rmdirNonEmpty.stderr).toMatch(/not empty/i);
    await inMount(m, 'rmdir modes/empty/inner && test -d modes/empty && rmdir modes/empty && test ! -e modes/empty');
    // Removing the last file keeps its directory.
    await inMount(m, 'mkdir gone && echo x > gone/only && sleep 0.3 && rm gone/only && test -d gone');
  });

  it('python mmap writes and fsync: the bytes land; fsync makes them durable, the close makes the version', async () => {
    await inMount(
      m,
      `python3 -c "
import mmap, os
with open('mm.bin', 'wb') as f:
    f.write(bytes(200000))
with open('mm.bin', 'r+b') as f:
    mm = mmap.mmap(f.fileno(), 0)
    mm[150000:150005] = b'HELLO'
    mm.flush()
    mm.close()
"`,
    );
    await m.idle();
    const data = await m.read('mm.bin');
    expect(data.length).toBe(200000);
    expect(data.subarray(150000, 150005).toString()).toBe('HELLO');

    // fsync asks for durability (the journal), not for a version: the version comes at the close. A
    // file held open and changed for longer than 2 s is versioned at its next fsync all the same.
    await inMount(
      m,
      `python3 -c "
import os, json, time, urllib.request
def history():
    req = urllib.request.Request('${m.url}/v1/projects/${m.projectId}/history?path=synced.txt', headers={'authorization': 'Bearer ${m.apiKey}'})
    return json.load(urllib.request.urlopen(req))['items']
f = open('synced.txt', 'w'); f.write('durable\\n'); f.flush(); os.fsync(f.fileno())
assert history() == [], history()
time.sleep(2.1)
f.write('more\\n'); f.flush(); os.fsync(f.fileno())
items = history()
assert len(items) == 1 and items[0]['size'] == 13, items
f.close()
"`,
    );
    await m.idle();
    expect((await m.history('synced.txt')).map((version) => version.size)).toEqual([13]);
  });

  it('a descriptor on a name that was replaced (O_PATH) finds nothing, not the file that took the name', async () => {
    // fsstress: a symbolic link replaced by a rename answered readlink with EINVAL and fstat with EIO
    // through a descriptor still on the link (the requests went to the new file, of another type).
    const out = await inMount(
      m,
      `ln -s target replaced-link && echo d > replacement && python3 -c "
import os
fd = os.open('replaced-link', os.O_PATH | os.O_NOFOLLOW)
os.rename('replacement', 'replaced-link')
for call in (lambda: os.readlink('', dir_fd=fd), lambda: os.fstat(fd)):
    try: call(); print('answered')
    except OSError as e: print(e.errno)
print(open('replaced-link').read().strip())
"`,
    );
    expect(out.stdout).toBe('2\n2\nd\n');
  });

  it('a file unlinked while open stays readable and writable through its descriptor; nothing is versioned for it', async () => {
    await inMount(
      m,
      `python3 -c "
import os
f = open('scratch.tmp', 'w+b')
os.unlink('scratch.tmp')
f.write(b'abc' * 1000); f.flush(); f.seek(0)
assert f.read() == b'abc' * 1000
assert not os.path.exists('scratch.tmp')
f.close()
"`,
    );
    await m.idle();
    const listing = await inMount(m, 'ls -A');
    expect(listing.stdout).not.toMatch(/fuse_hidden|scratch/);
    expect(await m.history('scratch.tmp')).toEqual([]);
  });

  it('offsets past 4 GiB: a byte written at 5 GiB reads back from there', async () => {
    const out = await inMount(
      m,
      `printf Z | dd of=huge.bin bs=1 seek=${5 * 1024 ** 3} conv=notrunc status=none && stat -c %s huge.bin && dd if=huge.bin bs=1 skip=${5 * 1024 ** 3} count=1 status=none && rm huge.bin`,
    );
    expect(out.stdout).toBe(`${5 * 1024 ** 3 + 1}\nZ`);
  });

  it('concurrent writers and readers on different files', async () => {
    const script = Array.from(
      { length: 4 },
      (_, i) => `(for j in $(seq 1 20); do echo "w${i} $j" >> conc/f${i}.txt; cat conc/f${(i + 1) % 4}.txt > /dev/null 2>&1 || true; done) &`,
    ).join('\n');
    await inMount(m, `mkdir conc\n${script}\nwait`);
    await m.idle();
    for (let i = 0; i < 4; i++) {
      const lines = (await m.read(`conc/f${i}.txt`)).toString().trim().split('\n');
      expect(lines).toHaveLength(20);
      expect(lines[19]).toBe(`w${i} 20`);
    }
  });

  it('ln makes hard links (test/mount-hardlinks.test.ts), not into ignored names (EXDEV); ln -s works (test/mount-posix.test.ts)', async () => {
    await inMount(m, 'echo x > links.txt && mkdir -p .git');
    await sh('ln', [join(m.dir, 'links.txt'), join(m.dir, 'hard.txt')]);
    expect((await inMount(m, 'cat hard.txt && stat -c %h links.txt')).stdout).toBe('x\n2\n');
    // A versioned file and a plain file of the backing directory cannot be one inode.
    const across = await sh('ln', [join(m.dir, 'links.txt'), join(m.dir, '.git/hard.txt')], { allowFail: true });
    expect(across.code).not.toBe(0);
    expect(across.stderr).toMatch(/Invalid cross-device link/);
    const soft = await sh('ln', ['-s', 'links.txt', join(m.dir, 'soft.txt')]);
    expect(soft.code).toBe(0);
  });

  it('.strata/project.json is there, read-only, and git leaves .strata/ alone', async () => {
    const out = await inMount(m, 'cat .strata/project.json');
    expect(JSON.parse(out.stdout)).toEqual({ projectId: m.projectId, home: m.home });
    expect((await inMount(m, 'ls -A .strata && cat .strata/.gitignore')).stdout).toBe('.gitignore\nproject.json\n*\n');
    // git over the mount's tree (its repository elsewhere): .strata/ is not untracked, it is ignored.
    const git = await inMount(m, 'd=$(mktemp -d) && git init -q --bare "$d" && git --git-dir="$d" --work-tree=. status --porcelain --untracked-files=all --ignored -- .strata; rm -rf "$d"');
    expect(git.stdout).toBe('!! .strata/.gitignore\n!! .strata/project.json\n');
    const write = await sh('bash', ['-c', 'echo x > .strata/project.json'], { cwd: m.dir, allowFail: true });
    expect(write.code).not.toBe(0);
  });
});
