// A client that stops reading a download must not hold the daemon's stop: `strata daemon` waited for
// the response to finish until the CLI's 30 s stop deadline and then exited 1 ("stop timed out"), so
// a systemd stop failed. The daemon now lets requests in flight finish for 5 s, then closes their
// connections and exits 0.

import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { baseEnv, MAIN, startListening } from './cli-harness.js';
import { sh, waitFor } from './daemon-harness.js';

describe('the daemon stopping while a client holds a download', () => {
  let root: string;
  let daemon: Awaited<ReturnType<typeof startListening>> | undefined;
  afterAll(async () => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });

  it('closes the stalled connection after its drain and exits 0', async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-stop-stalled-'));
    const env = { ...baseEnv(join(root, 'config')), STRATA_HOME: join(root, 'home') };
    const dir = join(root, 'project');
    const strata = (args: string[], allowFail = false) => sh(process.execPath, [MAIN, ...args], { cwd: dir, env, allowFail, timeoutMs: 20_000 });
    await sh(process.execPath, [MAIN, 'init', dir], { cwd: root, env, timeoutMs: 20_000 });
    daemon = await startListening(['daemon', '--listen', '127.0.0.1:0'], env);
    await writeFile(join(dir, 'big.bin'), randomBytes(24 * 1024 * 1024));
    await waitFor(
      'big.bin versioned',
      async () => {
        const r = await strata(['history', 'big.bin', '--json'], true);
        return r.code === 0 && JSON.parse(r.stdout).items.length === 1 ? true : undefined;
      },
      30_000,
    );
    const key = (await readFile(join(root, 'home', 'secrets', 'local-owner.key'), 'utf8')).trim();
    const projectId = (JSON.parse(await readFile(join(dir, '.strata', 'project.json'), 'utf8')) as { projectId: string }).projectId;
    const response = await fetch(`${daemon.url}/v1/projects/${projectId}/fs/read?path=big.bin`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    await reader.read(); // one chunk, then never again: the rest waits in the socket
    const started = Date.now();
    daemon.child.kill('SIGTERM');
    const [code] = (await once(daemon.child, 'exit')) as [number | null];
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(daemon.stderr()).not.toContain('stop timed out');
    await reader.cancel().catch(() => undefined);
  }, 120_000);
});
