// Watch mode against the real tools people use (issue 3, "Tests"): every completed write becomes
// exactly one version, temp files of atomic saves never appear, ignore rules hold.

import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sh, type WatchedProject, watchProject } from './daemon-harness.js';

describe('watch mode with real tools', () => {
  let w: WatchedProject;
  let outside: string;
  beforeAll(async () => {
    w = await watchProject();
    outside = await mkdtemp(join(tmpdir(), 'strata-outside-'));
  });
  afterAll(async () => {
    await w?.dispose();
    await rm(outside, { recursive: true, force: true });
  });
  const at = (path: string) => join(w.dir, path);
  const bash = (script: string) => sh('bash', ['-c', script], { cwd: w.dir });

  /** paths in the current tree matching `pattern` */
  async function treePaths(pattern: RegExp): Promise<string[]> {
    return [...(await w.tree()).keys()].filter((p) => pattern.test(p));
  }

  it('cp: one version with the copied bytes', async () => {
    await writeFile(join(outside, 'src.txt'), 'copied content\n');
    await sh('cp', [join(outside, 'src.txt'), at('cp.txt')]);
    await w.idle();
    const history = await w.history('cp.txt');
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({ kind: 'write', size: 15, executable: false, actor: { kind: 'local' } });
    expect(await w.read('cp.txt')).toBe('copied content\n');
  });

  it('dd: a multi-megabyte file, streamed (worker thread), one version with the right bytes', async () => {
    await sh('dd', ['if=/dev/urandom', `of=${at('big.bin')}`, 'bs=1M', 'count=3', 'conv=fsync', 'status=none']);
    await w.idle();
    const history = await w.history('big.bin');
    expect(history).toHaveLength(1);
    expect(history[0]!.size).toBe(3 * 1024 * 1024);
    const local = createHash('sha256').update(await readFile(at('big.bin'))).digest('hex');
    const response = await fetch(`${w.daemon.url}/v1/projects/${w.projectId}/fs/read?path=big.bin`, { headers: { authorization: `Bearer ${w.daemon.owner.apiKey}` } });
    const stored = createHash('sha256').update(Buffer.from(await response.arrayBuffer())).digest('hex');
    expect(stored).toBe(local);
  });

  it('sed -i: one new version, none of sed\'s temp file', async () => {
    await writeFile(at('sed.txt'), 'alpha\nbeta\n');
    await w.idle();
    await sh('sed', ['-i', 's/alpha/gamma/', at('sed.txt')]);
    await w.idle();
    const history = await w.history('sed.txt');
    expect(history.map((v) => v.kind)).toEqual(['write', 'write']);
    expect(await w.read('sed.txt')).toBe('gamma\nbeta\n');
    expect(await treePaths(/^sed[^.]/)).toEqual([]);
  });

  it('mv: a rename keeps history findable (tombstone at the source, same content at the target)', async () => {
    await writeFile(at('before.m'), 'x = 1;\n');
    await w.idle();
    const [original] = await w.history('before.m');
    await sh('mv', [at('before.m'), at('after.m')]);
    await w.idle();
    expect((await w.history('before.m')).map((v) => v.kind)).toEqual(['delete', 'write']);
    const target = await w.history('after.m');
    expect(target).toHaveLength(1);
    expect(target[0]!.contentHash).toBe(original!.contentHash);
    expect(await w.read('after.m')).toBe('x = 1;\n');
  });

  it('rsync -a: every file once, none of rsync\'s temp files', async () => {
    const src = join(outside, 'rsync-src');
    await sh('mkdir', ['-p', join(src, 'sub')]);
    for (let i = 0; i < 20; i++) await writeFile(join(src, i % 2 ? 'sub' : '', `r${i}.dat`), `rsync ${i}\n`.repeat(100));
    await sh('rsync', ['-a', `${src}/`, `${at('rs')}/`]);
    await w.idle();
    const paths = await treePaths(/^rs\//);
    expect(paths).toHaveLength(20);
    expect(paths.every((p) => /^rs\/(sub\/)?r\d+\.dat$/.test(p))).toBe(true);
    expect(await w.read('rs/sub/r1.dat')).toBe('rsync 1\n'.repeat(100));
    expect(await w.history('rs/r0.dat')).toHaveLength(1);
  });

  it('tar x: every member versioned', async () => {
    const src = join(outside, 'tar-src');
    await sh('mkdir', ['-p', join(src, 'a', 'b')]);
    for (let i = 0; i < 30; i++) await writeFile(join(src, i % 3 === 0 ? 'a/b' : 'a', `t${i}.txt`), `tar ${i}\n`);
    await sh('tar', ['cf', join(outside, 't.tar'), '-C', src, '.']);
    await sh('mkdir', ['-p', at('tarx')]);
    await sh('tar', ['xf', join(outside, 't.tar'), '-C', at('tarx')]);
    await w.idle();
    const paths = await treePaths(/^tarx\//);
    expect(paths).toHaveLength(30);
    expect(await w.read('tarx/a/b/t0.txt')).toBe('tar 0\n');
  });

  it('git clone: the working tree is versioned, .git/ is not', async () => {
    const repo = join(outside, 'repo');
    await sh('git', ['init', '-q', repo]);
    for (let i = 0; i < 3; i++) {
      await writeFile(join(repo, `g${i}.py`), `print(${i})\n`);
      await sh('git', ['-C', repo, 'add', '.']);
      await sh('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', `c${i}`]);
    }
    await sh('git', ['clone', '-q', repo, at('clone')]);
    await w.idle();
    expect((await treePaths(/^clone\//)).sort()).toEqual(['clone/g0.py', 'clone/g1.py', 'clone/g2.py']);
    expect(await w.read('clone/g2.py')).toBe('print(2)\n');
  });

  it('Python: a plain write, then os.replace of a temp file → one version each, none of the temp', async () => {
    const script = [
      'import os, time',
      "open('py.txt', 'w').write('one\\n')",
      'time.sleep(0.5)',
      "with open('py.txt.tmp', 'w') as f:",
      "    f.write('two\\n')",
      '    f.flush()',
      '    os.fsync(f.fileno())',
      "os.replace('py.txt.tmp', 'py.txt')",
    ].join('\n');
    await sh('python3', ['-c', script], { cwd: w.dir });
    await w.idle();
    const history = await w.history('py.txt');
    expect(history).toHaveLength(2);
    expect(await w.read('py.txt')).toBe('two\n');
    expect(await w.history('py.txt.tmp')).toEqual([]);
  });

  it('truncate and >>: each is one new version', async () => {
    await writeFile(at('log.txt'), 'line 1\n');
    await w.idle();
    await bash('echo "line 2" >> log.txt');
    await w.idle();
    expect(await w.read('log.txt')).toBe('line 1\nline 2\n');
    await sh('truncate', ['-s', '0', at('log.txt')]);
    await w.idle();
    const history = await w.history('log.txt');
    expect(history.map((v) => v.size)).toEqual([0, 14, 7]);
  });

  it('chmod +x: a new version with the exec bit and the same content; touch makes none', async () => {
    await writeFile(at('run.sh'), '#!/bin/sh\necho hi\n');
    await w.idle();
    await sh('chmod', ['+x', at('run.sh')]);
    await w.idle();
    let history = await w.history('run.sh');
    expect(history.map((v) => v.executable)).toEqual([true, false]);
    expect(history[0]!.contentHash).toBe(history[1]!.contentHash);
    await sh('touch', [at('run.sh')]);
    await sh('chmod', ['+x', at('run.sh')]);
    await w.idle();
    history = await w.history('run.sh');
    expect(history).toHaveLength(2);
  });

  it('editor-style atomic saves (vim backup dance, temp + rename) give exactly one version, none of the temps', async () => {
    await writeFile(at('paper.tex'), 'draft 1\n');
    await w.idle();
    // vim (backupcopy=no): probe file 4913, move the original to paper.tex~, write anew, drop the backup
    await bash('touch 4913 && rm 4913 && mv paper.tex paper.tex~ && printf "draft 2\\n" > paper.tex && rm paper.tex~');
    await w.idle();
    // VS Code / MATLAB style: write a temp next to it, rename over the target
    await bash('printf "draft 3\\n" > .paper.tex.12345.tmp && mv .paper.tex.12345.tmp paper.tex');
    await w.idle();
    const history = await w.history('paper.tex');
    expect(history.map((v) => v.kind)).toEqual(['write', 'write', 'write']);
    expect(await w.read('paper.tex')).toBe('draft 3\n');
    expect(await treePaths(/paper\.tex.|4913/)).toEqual([]);
    expect(await w.history('.paper.tex.12345.tmp')).toEqual([]);
    expect(await w.history('paper.tex~')).toEqual([]);
  });

  it('.strataignore and the defaults are respected', async () => {
    await writeFile(at('.strataignore'), '*.log\nbuild/\n');
    await w.idle();
    await bash('mkdir -p build ign/__pycache__ && echo o > build/x.o && echo l > run.log && echo k > keep.txt && echo s > .keep.txt.swp && echo p > ign/__pycache__/m.pyc && mkdir -p .git && echo g > .git/HEAD');
    await w.idle();
    const paths = await w.tree();
    expect(paths.has('keep.txt')).toBe(true);
    expect(paths.has('.strataignore')).toBe(true);
    for (const ignored of ['build/x.o', 'run.log', '.keep.txt.swp', 'ign/__pycache__/m.pyc', '.git/HEAD', '.strata/project.json']) {
      expect(paths.has(ignored), ignored).toBe(false);
    }
    // Un-ignoring: the files the old rules skipped are picked up, and their directory is watched.
    await writeFile(at('.strataignore'), '*.log\n');
    await w.idle();
    expect(await w.read('build/x.o')).toBe('o\n');
    await writeFile(at('build/y.o'), 'y\n');
    await w.idle();
    expect(await w.read('build/y.o')).toBe('y\n');
    expect((await w.tree()).has('run.log')).toBe(false);
  });
});
