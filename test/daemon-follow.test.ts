// Renames are recorded as renames in both daemon modes, so `strata history PATH --follow` crosses
// them (issue 18): a file renamed in a watched directory and in a mounted one, then its history
// asked for under the new name through the compiled CLI.

import { once } from 'node:events';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { baseEnv, MAIN, parseJson, runCli, startListening } from './cli-harness.js';
import { sh, waitFor } from './daemon-harness.js';
import { mountProject } from './mount-harness.js';

interface Followed {
  items: Array<{ versionId: string; path: string; kind: string; renamedFrom?: string }>;
}

describe('history --follow across renames made in the daemon modes', () => {
  it('watch mode: mv in the directory', async () => {
    const root = await mkdtemp(join(tmpdir(), 'strata-follow-watch-'));
    const env = { ...baseEnv(join(root, 'config')), STRATA_HOME: join(root, 'home') };
    const dir = join(root, 'thesis');
    const strata = (args: string[]) => sh(process.execPath, [MAIN, ...args], { cwd: dir, env, allowFail: true, timeoutMs: 20_000 });
    let daemon: Awaited<ReturnType<typeof startListening>> | undefined;
    try {
      await sh(process.execPath, [MAIN, 'init', dir], { cwd: root, env, timeoutMs: 20_000 });
      daemon = await startListening(['daemon', '--listen', '127.0.0.1:0'], env);
      await writeFile(join(dir, 'draft.m'), 'x = 1;\n');
      const versions = async (path: string) => {
        const r = await strata(['history', path, '--json']);
        return r.code === 0 ? (JSON.parse(r.stdout) as Followed).items : [];
      };
      await waitFor('draft.m versioned', async () => ((await versions('draft.m')).length === 1 ? true : undefined), 20_000);
      await rename(join(dir, 'draft.m'), join(dir, 'final.m'));
      await waitFor('final.m versioned', async () => ((await versions('final.m')).length === 1 ? true : undefined), 20_000);
      const followed = JSON.parse((await strata(['history', 'final.m', '--follow', '--json'])).stdout) as Followed;
      expect(followed.items.map((v) => [v.path, v.renamedFrom ?? null])).toStrictEqual([
        ['final.m', 'draft.m'],
        ['draft.m', null],
      ]);
      // short ids against the daemon: the table's 10 digits name the old version
      const short = followed.items[1]!.versionId.replace(/-/g, '').slice(-10);
      expect((await strata(['history', 'draft.m'])).stdout).toContain(short);
      const old = await strata(['cat', 'draft.m', '--version', short]);
      expect([old.code, old.stdout]).toStrictEqual([0, 'x = 1;\n']);
    } finally {
      if (daemon && daemon.child.exitCode === null) {
        daemon.child.kill('SIGTERM');
        await once(daemon.child, 'exit');
      }
      await rm(root, { recursive: true, force: true });
    }
  });

  it('mount mode: rename in the mounted directory', async () => {
    const mounted = await mountProject();
    try {
      await writeFile(join(mounted.dir, 'draft.py'), 'print(1)\n');
      await mounted.idle();
      await rename(join(mounted.dir, 'draft.py'), join(mounted.dir, 'final.py'));
      await mounted.idle();
      await waitFor('final.py versioned', async () => ((await mounted.history('final.py')).length === 1 ? true : undefined));
      const env = { ...baseEnv(join(mounted.root, 'config')), STRATA_SERVER_URL: mounted.url, STRATA_API_KEY: mounted.apiKey, STRATA_PROJECT_ID: mounted.projectId };
      const result = await runCli(['history', 'final.py', '--follow', '--json'], env, { cwd: mounted.root });
      expect(result.code, result.stderr).toBe(0);
      expect(parseJson<Followed>(result).items.map((v) => [v.path, v.renamedFrom ?? null])).toStrictEqual([
        ['final.py', 'draft.py'],
        ['draft.py', null],
      ]);
    } finally {
      await mounted.dispose();
    }
  });
});
