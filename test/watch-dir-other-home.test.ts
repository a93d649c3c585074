// A watched directory is one home's: `strata init --home OTHER DIR` (or `strata watch`) on a directory
// whose .strata/project.json names another home that still exists rewrote that file, and both homes'
// daemons then watched the directory (every save versioned twice, in two homes, and the CLI inside the
// directory sent to the newer one only). It is refused as PROJECT_DIR_TAKEN (exit 4), before anything
// is created, as `strata mount --import` already was; a directory whose home is gone can be bound again.

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, MAIN } from './cli-harness.js';
import { sh } from './daemon-harness.js';

describe('a watch directory bound to another home', () => {
  let root: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-watch-other-home-'));
    env = { ...baseEnv(join(root, 'config')), STRATA_HOME: join(root, 'home-a') };
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });
  const strata = (args: string[]) => sh(process.execPath, [MAIN, ...args, '--json'], { cwd: root, env, allowFail: true, timeoutMs: 30_000 });

  it('is refused by a second home (PROJECT_DIR_TAKEN) and keeps its project file; once its home is gone it can be bound again', async () => {
    const dir = join(root, 'lab');
    const first = await strata(['init', dir]);
    expect(first.code).toBe(0);
    const bound = JSON.parse(first.stdout) as { projectId: string };
    await writeFile(join(dir, 'run.py'), 'a = 1\n');
    const projectFile = await readFile(join(dir, '.strata', 'project.json'), 'utf8');

    const second = await strata(['init', dir, '--home', join(root, 'home-b')]);
    expect(second.code).toBe(4);
    const error = (JSON.parse(second.stdout) as { error: { code: string; message: string; details: unknown } }).error;
    expect(error.code).toBe('PROJECT_DIR_TAKEN');
    expect(error.message).toContain(`of another Strata home (${join(root, 'home-a')}`);
    expect(error.details).toMatchObject({ dir, projectId: bound.projectId, home: join(root, 'home-a') });
    expect(await readFile(join(dir, '.strata', 'project.json'), 'utf8')).toBe(projectFile);
    // Nothing was bound in the second home.
    const listed = JSON.parse(await readFile(join(root, 'home-b', 'daemon.json'), 'utf8').catch(() => '{"projects":[]}')) as { projects: unknown[] };
    expect(listed.projects).toEqual([]);

    // The first home removed: its directory is free for another.
    await rm(join(root, 'home-a'), { recursive: true, force: true });
    const again = await strata(['init', dir, '--home', join(root, 'home-b')]);
    expect(again.code).toBe(0);
    expect(JSON.parse(await readFile(join(dir, '.strata', 'project.json'), 'utf8'))).toMatchObject({ home: join(root, 'home-b') });
  }, 60_000);
});
