// `strata watch DIR` in the foreground (no daemon running) runs the home's daemon for every project
// of the home, not only DIR (issue 13 item 5): another watched directory of the same home is
// versioned too, and `strata status` lists every project with its state.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, MAIN, startListening } from './cli-harness.js';
import { sh, waitFor } from './daemon-harness.js';

describe('a foreground strata watch DIR runs every project of the home', () => {
  let root: string;
  let env: NodeJS.ProcessEnv;
  let foreground: Awaited<ReturnType<typeof startListening>> | undefined;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-foreground-'));
    env = { ...baseEnv(join(root, 'config')), STRATA_HOME: join(root, 'home') };
  });
  afterAll(async () => {
    if (foreground && foreground.child.exitCode === null) foreground.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });
  const strata = (args: string[], cwd: string, allowFail = false) => sh(process.execPath, [MAIN, ...args], { cwd, env, allowFail, timeoutMs: 20_000 });

  it('versions the other project of the home too, and status lists both', async () => {
    const thesis = join(root, 'thesis');
    const paper = join(root, 'paper');
    await mkdir(thesis);
    await mkdir(paper);
    await strata(['init', thesis], root);
    await strata(['init', paper], root);
    foreground = await startListening(['watch', thesis, '--listen', '127.0.0.1:0'], env);
    expect(foreground.stderr()).toMatch(/and the home's other projects/);

    await writeFile(join(thesis, 'a.m'), 'a\n');
    await writeFile(join(paper, 'draft.tex'), 'draft\n');
    for (const [dir, path] of [
      [thesis, 'a.m'],
      [paper, 'draft.tex'],
    ] as const) {
      await waitFor(`${path} versioned`, async () => {
        const r = await strata(['history', path, '--json'], dir, true);
        return r.code === 0 && JSON.parse(r.stdout).items.length === 1 ? true : undefined;
      }, 20_000);
    }
    const status = JSON.parse((await strata(['status', '--json'], root)).stdout) as { running: boolean; projects: Array<{ dir: string; state: string }> };
    expect(status.running).toBe(true);
    expect(status.projects.map((p) => [p.dir, p.state]).sort()).toEqual([
      [paper, 'watching'],
      [thesis, 'watching'],
    ]);

    foreground.child.kill('SIGTERM');
    await waitFor('foreground daemon stopped', () => (foreground!.child.exitCode !== null ? true : undefined), 20_000);
    expect(foreground.child.exitCode).toBe(0);
  }, 90_000);
});
