// A name that is not valid UTF-8 on the mount (issue 38 item 4): the kernel hands native/fuse the
// bytes, and JS used to get them as a string with U+FFFD in place of each stray byte, so
// `printf x > "$(printf 'bad\xff\xfename.txt')"` succeeded and was versioned as `bad\uFFFD\uFFFDname.txt`
// (a name the tool never gave, shared by every such name). The mount cannot record such names, so it
// refuses to create them with EILSEQ and records nothing.
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
  it('are refused with EILSEQ by every call that makes a name, and nothing is recorded', async () => {
    // Each line must fail, with the kernel's text for EILSEQ; `|| true` keeps the script going.
    const result = await inMount(
      m,
      [
        'bad=$(printf "bad\\xff\\xfename.txt"); err=$(mktemp)',
        'echo ok > good.txt',
        'printf x 2>>"$err" > "$bad" || true',
        'mkdir "$(printf "d\\xe9bit")" 2>>"$err" || true',
        'mv good.txt "$bad" 2>>"$err" || true',
        'ln -s good.txt "$bad" 2>>"$err" || true',
        'ln good.txt "$bad" 2>>"$err" || true',
        'ln -s "$(printf "t\\xff")" link 2>>"$err" || true',
        'cat "$err"; rm "$err"',
        'ls',
      ].join('\n'),
    );
    const errors = result.stdout.split('\n').filter((line) => line.includes('Invalid or incomplete multibyte'));
    expect(errors.length, result.stdout).toBe(6);
    expect(result.stdout).toMatch(/^good\.txt$/m);
    await m.idle();
    const history = await m.api<{ items: Array<{ path: string }> }>('GET', `/v1/projects/${m.projectId}/history?limit=100`);
    expect(history.items.map((v) => v.path)).toEqual(['good.txt']);
  }, 60_000);
});
