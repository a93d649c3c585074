// Durability of watch mode (issue 3): kill -9 of the daemon at a random instant during a write storm
// in the watched directory; after a restart every file's final content is versioned (its current
// entry hashes to the bytes on disk), deleted files are gone from the tree, and fsck is clean.
// Repeated three times on the same home.

import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonTarget } from '../cli/discover.js';
import { hashBuffer } from '../engine/hash.js';
import type { Entry } from '../engine/types.js';
import { baseEnv, MAIN } from './cli-harness.js';
import { sh, sleep, waitFor } from './daemon-harness.js';

// Writes, temp+rename saves, appends and deletes over 200 files, as fast as it can, for `ms`.
const STORM = `
const fs = require('node:fs/promises');
const path = require('node:path');
const [dir, ms] = [process.argv[1], Number(process.argv[2])];
(async () => {
  for (let d = 0; d < 5; d++) await fs.mkdir(path.join(dir, 'storm', 'd' + d), { recursive: true });
  const end = Date.now() + ms;
  let n = 0;
  while (Date.now() < end) {
    n++;
    const file = path.join(dir, 'storm', 'd' + (n % 5), 'f' + Math.floor(Math.random() * 40) + '.txt');
    const r = Math.random();
    try {
      if (r < 0.6) await fs.writeFile(file, 'write ' + n + ' ' + 'x'.repeat(n % 300) + '\\n');
      else if (r < 0.8) { await fs.writeFile(file + '.tmp', 'saved ' + n + '\\n'); await fs.rename(file + '.tmp', file); }
      else if (r < 0.95) await fs.appendFile(file, 'appended ' + n + '\\n');
      else await fs.rm(file, { force: true });
    } catch {}
    if (n % 20 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
})();
`;

interface DaemonProcess {
  child: ChildProcess;
  url: string;
}

function startDaemon(env: NodeJS.ProcessEnv): Promise<DaemonProcess> {
  const child = spawn(process.execPath, [MAIN, 'daemon', '--listen', '127.0.0.1:0'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`daemon did not start:\n${stderr}`)), 30_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /^listening on (http:\/\/\S+)$/m.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve({ child, url: match[1]! });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`daemon exited ${code}:\n${stderr}`));
    });
  });
}

async function localFiles(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const sub of await readdir(join(dir, 'storm'))) {
    for (const name of await readdir(join(dir, 'storm', sub))) {
      const path = `storm/${sub}/${name}`;
      if (name.endsWith('.tmp')) continue; // a temp file the storm was killed in the middle of
      const bytes = await readFile(join(dir, path));
      if ((await stat(join(dir, path))).isFile()) files.set(path, hashBuffer(bytes));
    }
  }
  return files;
}

describe('kill -9 of the daemon during a write storm', () => {
  let root: string;
  let env: NodeJS.ProcessEnv;
  let home: string;
  let dir: string;
  let projectId: string;
  let daemon: DaemonProcess | undefined;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-crash-'));
    home = join(root, 'home');
    dir = join(root, 'project');
    env = { ...baseEnv(join(root, 'config')), STRATA_HOME: home };
    const init = await sh(process.execPath, [MAIN, 'init', dir, '--json'], { env });
    projectId = (JSON.parse(init.stdout) as { projectId: string }).projectId;
  });
  afterAll(async () => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });

  async function api<T>(path: string, method = 'GET'): Promise<T> {
    const target = daemonTarget(home)!;
    const response = await fetch(`${daemon!.url}${path}`, { method, headers: { authorization: `Bearer ${target.apiKey}`, 'content-type': 'application/json' }, ...(method === 'POST' ? { body: '{}' } : {}) });
    if (!response.ok) throw new Error(`${path} → ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  }

  async function currentTree(): Promise<Map<string, Entry>> {
    const snapshot = await fetch(`${daemon!.url}/v1/projects/${projectId}/fs/snapshots`, {
      method: 'POST',
      headers: { authorization: `Bearer ${daemonTarget(home)!.apiKey}`, 'content-type': 'application/json' },
      body: '{}',
    }).then((r) => r.json() as Promise<{ snapshotId: string }>);
    const tree = new Map<string, Entry>();
    let cursor: string | undefined;
    do {
      const page = await api<{ items: Entry[]; nextCursor?: string }>(
        `/v1/projects/${projectId}/fs/snapshots/${snapshot.snapshotId}/entries?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      for (const entry of page.items) tree.set(entry.path, entry);
      cursor = page.nextCursor;
    } while (cursor);
    return tree;
  }

  for (const round of [1, 2, 3]) {
    it(`round ${round}: every file's final content is versioned after the restart; fsck is clean`, async () => {
      daemon = await startDaemon(env);
      const storm = spawn(process.execPath, ['-e', STORM, dir, '2500'], { stdio: 'ignore' });
      const stormDone = once(storm, 'exit');
      await sleep(400 + Math.floor(Math.random() * 1500));
      daemon.child.kill('SIGKILL');
      await once(daemon.child, 'exit');
      await stormDone;

      daemon = await startDaemon(env);
      await waitFor(
        'the catch-up scan to finish and the daemon to go idle',
        async () => {
          const status = await api<{ projects: Array<{ pending: number; scan: { finished: boolean } | null; massDeleteGuard: { tripped: boolean } }> }>('/v1/daemon/status');
          const p = status.projects[0]!;
          return p.pending === 0 && p.scan?.finished === true ? p : undefined;
        },
        30_000,
      );
      await sleep(300);
      const local = await localFiles(dir);
      const tree = await currentTree();
      const stormEntries = [...tree.keys()].filter((p) => p.startsWith('storm/'));
      const wrong: string[] = [];
      for (const [path, hash] of local) if (tree.get(path)?.contentHash !== hash) wrong.push(`${path}: disk ${hash} vs ${tree.get(path)?.contentHash}`);
      for (const path of stormEntries) if (!local.has(path)) wrong.push(`${path}: deleted on disk, still in the tree`);
      expect(wrong).toEqual([]);
      expect(local.size).toBeGreaterThan(20);

      const fsck = await api<{ ok: boolean; missing: unknown[]; corrupt: unknown[] }>('/v1/admin/fsck', 'POST');
      expect(fsck).toMatchObject({ ok: true, missing: [], corrupt: [] });
      daemon.child.kill('SIGTERM');
      expect((await once(daemon.child, 'exit'))[0]).toBe(0);
    }, 90_000);
  }
});
