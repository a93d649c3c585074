// fsx on the mount (issue 39, "Tests"): random reads, writes, truncates and mmap IO on one file, each
// read checked against fsx's model of the file (test/stress/fsx.py), while this test takes snapshots
// and restores snapshots and versions of that very file at random moments.
//
// The mount's rule (docs/mount.md): a process holding a file open for writing keeps its view through
// a restore, and what it writes is versioned after it; once it closes without having written since,
// the restore shows. fsx holds a descriptor open for writing, except around its "closeall" (which
// lets the mount version the file, so restores meet a clean file under a writer, not only local
// changes): it holds a lock from a write just before those closes until it has reopened, and every
// restore here takes that lock. So no read may ever see a restored byte. At the end fsx waits until
// the restores have stopped, writes its model over the file once more and closes: then the mount, the
// engine's current entry and fsx's model must be the same bytes. Replay a seed with
// STRATA_STRESS_SEED=N (and STRATA_FSX_OPS); STRATA_STRESS_LOG=1 prints each run's counts.

import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject, sh } from './mount-harness.js';
import { disturbFsx } from './stress/disturb.js';
import { controlOf, FSX, settledFlag, sha256, stressSeeds } from './stress/lib.js';

const SEEDS = stressSeeds([11, 12]);
const OPS = Number(process.env['STRATA_FSX_OPS'] ?? 8000);

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject();
});

afterAll(async () => {
  await m?.dispose();
});

describe('fsx on the mount, with snapshots and restores in the middle', () => {
  for (const seed of SEEDS) {
    it(`seed ${seed}: no read sees anything but what fsx wrote; at the end mount, engine and model agree`, async () => {
      const file = `fsx-${seed}.bin`;
      const [state, lockFile, doneFile, goFile] = ['state', 'lock', 'done', 'go'].map((what) => join(m.root, `fsx-${seed}.${what}`)) as [string, string, string, string];
      const args = [FSX, '--file', file, '--seed', String(seed), '--ops', String(OPS), '--state-out', state, '--lock-file', lockFile, '--done-file', doneFile, '--go-file', goFile];
      const fsx = sh('python3', args, { cwd: m.dir, timeoutMs: 150_000, allowFail: true });
      const exited = settledFlag(fsx);
      const disturbed = await disturbFsx(controlOf(m.url, m.apiKey, m.projectId), file, lockFile, seed, () => exited() || existsSync(doneFile));
      // The restores have stopped (the last one answered): fsx writes its model once more and closes.
      await writeFile(goFile, '');
      const result = await fsx;
      expect(result.code, `${result.stderr}\n${result.stdout}`).toBe(0);
      const summary = JSON.parse(result.stdout) as { ok: boolean; ops: number; sha256: string };
      if (process.env['STRATA_STRESS_LOG']) console.error(JSON.stringify({ seed, disturbed, summary }));
      expect(summary).toMatchObject({ ok: true, ops: OPS });
      expect(disturbed.snapshotRestores + disturbed.versionRestores, JSON.stringify(disturbed)).toBeGreaterThan(0);

      await m.idle();
      expect(sha256(await readFile(state))).toBe(summary.sha256);
      const onMount = (await inMount(m, `sha256sum ${file}`)).stdout.split(' ')[0];
      expect(onMount, 'the mount shows the model').toBe(summary.sha256);
      expect(sha256(await m.read(file)), "the engine's current entry is the model").toBe(summary.sha256);
      const kinds = (await m.history(file)).map((v) => v.kind);
      expect(kinds[0], 'fsx wrote last').toBe('write');
      expect(kinds, 'the restores are in the history').toContain('restore');
    }, 180_000);
  }
});
