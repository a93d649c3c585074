// A versioned file renamed onto an ignored name that exists (`mv f f~`, `mv f f.swp`): the ignored
// name is replaced by the file, as rename(2) says, and nothing else is lost. The mount wrote the file's
// bytes to the ignored name and then removed "the target" — that very copy — so both names were gone
// and `mv` exited 0 (issue 39 item 1). Emacs makes its backup this way on every save after the first;
// a link renamed so answered EEXIST. Versioning of the file stops at the ignored name (its deletion is
// recorded at the old one), as for any move out of the versioned tree.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject();
});

afterAll(async () => {
  await m?.dispose();
});

const run = async (script: string) => (await inMount(m, script)).stdout;

describe('a rename onto an existing ignored name', () => {
  it('replaces the ignored file with the renamed one, before its first capture', async () => {
    expect(await run(`echo old > 'a~'; echo precious > a; mv a 'a~'; ls -A | grep -v '^.strata$'; cat 'a~'`)).toBe('a~\nprecious\n');
    await m.idle();
    expect(await run(`cat 'a~'`)).toBe('precious\n');
  });

  it('replaces it after the file was versioned, and records the versioned name as deleted', async () => {
    await run('echo v1 > b');
    await m.idle();
    expect(await run(`echo old > b.swp; mv b b.swp; ls -A | grep -c '^b$' || true; cat b.swp`)).toBe('0\nv1\n');
    await m.idle();
    expect(await m.stat('b')).toBeNull();
    expect((await m.history('b')).map((v) => v.kind)).toContain('delete');
    expect(await run('cat b.swp')).toBe('v1\n');
  });

  it("keeps every save's backup the Emacs way (rename the file to file~, write a new file)", async () => {
    await run('echo v1 > notes.txt');
    await m.idle();
    for (const [before, next] of [['v1', 'v2'], ['v2', 'v3'], ['v3', 'v4']]) {
      await run(`mv notes.txt 'notes.txt~' && echo ${next} > notes.txt`);
      expect(await run(`cat notes.txt 'notes.txt~'`)).toBe(`${next}\n${before}\n`);
      await m.idle();
    }
    expect((await m.read('notes.txt')).toString()).toBe('v4\n');
  });

  it('moves a link onto an ignored name that exists (no EEXIST)', async () => {
    await run('ln -s target-of-link l');
    await m.idle();
    expect(await run(`echo old > 'l~'; mv l 'l~'; readlink 'l~'; ls -A | grep -c '^l$' || true`)).toBe('target-of-link\n0\n');
  });
});
