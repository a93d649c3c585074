// A daemon runs as the user whose home it is: root in a colleague's project directory (sudo habits,
// the project's .strata/project.json naming her home) ran a daemon on her home that left root-owned
// objects, locks and state there and root-owned files in her project. Needs root (to own a home by
// another user).
import { chown, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { baseEnv, MAIN } from './cli-harness.js';
import { sh } from './daemon-harness.js';
import { tempDir } from './helpers/world.js';

const asRoot = process.getuid?.() === 0;

describe.skipIf(!asRoot)("a daemon on another user's home", () => {
  it('is refused with FORBIDDEN naming the owner, and writes nothing there', async () => {
    const root = await tempDir('strata-foreign-home-');
    try {
      const home = join(root.path, 'alice-home');
      await mkdir(home, { mode: 0o700 });
      await chown(home, 65534, 65534);
      const run = await sh(process.execPath, [MAIN, 'daemon', '--home', home, '--listen', '127.0.0.1:0'], { env: baseEnv(join(root.path, 'config')), allowFail: true, timeoutMs: 30_000 });
      expect(run.code, run.stderr).toBe(5);
      expect(run.stderr).toMatch(/belongs to another user \(uid 65534\).*\(FORBIDDEN\)/);
      expect(await readdir(home)).toEqual([]);
    } finally {
      await root.cleanup();
    }
  });
});
