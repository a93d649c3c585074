// A home holds every version of every file, whatever their modes in the project. One Strata creates is
// 0700; one the user made beforehand (`mkdir /scratch/me/strata`, then `--home`) kept its 0755, so its
// store and database (0644) were readable by every user of a shared workstation. A fresh home is made
// 0700 when it is first opened; a home in use keeps the mode its owner gave it.

import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLocalEngine } from '../engine/local.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-home-private-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const modeOf = async (path: string) => (await stat(path)).mode & 0o777;

describe('the mode of a home', () => {
  it('an empty directory made beforehand becomes 0700 when it is first opened as a home', async () => {
    const home = join(root, 'made-by-hand');
    await mkdir(home);
    await chmod(home, 0o755);
    const local = await openLocalEngine({ home });
    await local.close();
    expect(await modeOf(home)).toBe(0o700);
  });

  it('so does one where the daemon took its lock and wrote its config first (`strata daemon`, `strata init --home`)', async () => {
    const home = join(root, 'daemon-first');
    await mkdir(join(home, 'daemon'), { recursive: true });
    await chmod(home, 0o755);
    await writeFile(join(home, 'daemon', 'daemon.lock'), `${process.pid}\n`);
    await writeFile(join(home, 'daemon.json'), '{"projects":[]}\n');
    const local = await openLocalEngine({ home });
    await local.close();
    expect(await modeOf(home)).toBe(0o700);
  });

  it('a home Strata creates is 0700, and one whose owner opened it up keeps its mode', async () => {
    const home = join(root, 'created');
    const first = await openLocalEngine({ home });
    await first.close();
    expect(await modeOf(home)).toBe(0o700);
    await chmod(home, 0o750);
    await writeFile(join(home, 'NOTE'), 'shared with the group on purpose\n');
    const again = await openLocalEngine({ home });
    await again.close();
    expect(await modeOf(home)).toBe(0o750);
  });
});
