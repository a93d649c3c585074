// A name that is not valid UTF-8 on the mount (issue 38 item 4): the kernel hands native/fuse the
// bytes, and JS used to get them as a string with U+FFFD in place of each stray byte, so
// `printf x > "$(printf 'bad\xff\xfename.txt')"` succeeded and was versioned as `bad\uFFFD\uFFFDname.txt`
// (a name the tool never gave, shared by every such name). Then the mount refused such names with
// EILSEQ, and showed a synced one by its private-use characters. Now the mount is byte-exact, as watch
// mode is: the name is recorded with each stray byte 0xHH as U+EF00+0xHH (native/fuse/src/names.c) and
// listed as the very bytes the tool gave. A name whose own text holds one of those characters would make
// two names one: it is refused with EILSEQ, and so is a link target that is not UTF-8.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject } from './mount-harness.js';

let m: MountedDir;
beforeAll(async () => {
  m = await mountProject();
}, 60_000);
afterAll(async () => {
  await m?.dispose();
}, 60_000);

describe('names that are not valid UTF-8 on the mount', () => {
  it('are kept byte for byte: created, listed, read, renamed, linked and removed by those bytes', async () => {
    const result = await inMount(
      m,
      [
        'set -e',
        'bad=$(printf "bad\\xff\\xfename.txt"); dir=$(printf "d\\xe9bit")',
        'printf precious > "$bad"',
        'mkdir "$dir"',
        'echo inside > "$dir/$(printf "caf\\xe9.csv")"',
        'echo other > other.txt',
        'cp other.txt "$dir/$(printf "moved\\x80")"',
        'echo m > m.txt; mv m.txt "$(printf "m\\xfa")"; mv "$(printf "m\\xfa")" "$dir/$(printf "m\\xfb")"',
        'ln -s other.txt "$(printf "link\\xe9")"',
        'ln "$bad" "$(printf "hard\\xfe")"',
        'rm "$(printf "hard\\xfe")"',
        // ls -b shows stray bytes as octal escapes: the listing is the bytes, not U+FFFD or U+EFxx
        'ls -b . "$dir"',
        'echo "content=$(cat "$bad") via-link=$(cat "$(printf "link\\xe9")") inside=$(cat "$dir/$(printf "caf\\xe9.csv")")"',
      ].join('\n'),
    );
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^bad\\377\\376name\.txt$/m);
    expect(result.stdout).toMatch(/^d\\351bit$/m);
    expect(result.stdout).toMatch(/^caf\\351\.csv$/m);
    expect(result.stdout).toMatch(/^moved\\200$/m);
    expect(result.stdout).toMatch(/^link\\351$/m);
    expect(result.stdout).toMatch(/^m\\373$/m);
    expect(result.stdout).not.toMatch(/^m\\372$/m);
    expect(result.stdout).not.toMatch(/hard/);
    expect(result.stdout).toContain('content=precious via-link=other inside=inside');
    await m.idle();
    const history = await m.api<{ items: Array<{ path: string }> }>('GET', `/v1/projects/${m.projectId}/history?limit=100`);
    const paths = new Set(history.items.map((v) => v.path));
    expect(paths).toContain('bad\uefff\ueffename.txt');
    expect(paths).toContain('d\uefe9bit/caf\uefe9.csv');
    expect(paths).toContain('d\uefe9bit/moved\uef80');
    expect(paths).toContain('link\uefe9');
    expect(paths).toContain('d\uefe9bit/m\ueffb');
    expect([...paths].some((p) => p.includes('\ufffd'))).toBe(false);
  }, 60_000);

  it('refuses a name whose own text holds the reserved characters, and a link target that is not UTF-8', async () => {
    const result = await inMount(
      m,
      [
        'err=$(mktemp)',
        // U+EFFF as UTF-8 (EE BF BF): recording it would make it the same name as the byte 0xFF
        'echo x 2>>"$err" > "$(printf "res\\xee\\xbf\\xbf.txt")" || true',
        'mkdir "$(printf "res\\xee\\xbe\\x80")" 2>>"$err" || true',
        'ln -s "$(printf "t\\xff")" link 2>>"$err" || true',
        'cat "$err"; rm "$err"',
        'ls',
      ].join('\n'),
    );
    const errors = result.stdout.split('\n').filter((line) => line.includes('Invalid or incomplete multibyte'));
    expect(errors.length, result.stdout).toBe(3);
    expect(result.stdout).not.toMatch(/^res/m);
    expect(result.stdout).not.toMatch(/^link$/m);
  }, 60_000);
});
