// `strata status` for a mounted project: the mount's own capture statistics (versions captured, open
// files, changes not yet versioned and staged, errors, warnings) and its FUSE operation counts and
// average latency, in the daemon's HTTP status and through the CLI, with the same field names as
// watch mode where they mean the same. The mount is served by `strata mount` in a child process.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DaemonStatus } from '../daemon/daemon.js';
import type { ProjectStatus } from '../daemon/project-runner.js';
import { baseEnv, MAIN } from './cli-harness.js';
import { inMount, type MountedDir, mountProject, sh, waitFor } from './mount-harness.js';

let m: MountedDir;

beforeAll(async () => {
  m = await mountProject();
});

afterAll(async () => {
  await m?.dispose();
});

async function status(): Promise<ProjectStatus> {
  const doc = await m.api<DaemonStatus>('GET', '/v1/daemon/status');
  return doc.projects.find((p) => p.projectId === m.projectId)!;
}

const strata = (args: string[]) => sh(process.execPath, [MAIN, ...args, '--home', m.home], { env: baseEnv(`${m.root}/config`), timeoutMs: 20_000 });

describe('strata status on a mounted project', () => {
  it('shows open and staged files while a writer holds one, then the captures and operation counts', async () => {
    await inMount(m, 'mkdir -p src && printf "a = 1\\n" > src/a.py && printf "b\\n" > src/b.txt && printf "c\\n" > c.m');
    await m.idle();
    // A writer keeps a file open with 200 KB written: above the 64 KiB in-memory limit, so staged.
    const holder = inMount(m, 'exec 3>held.bin; head -c 200000 /dev/zero >&3; sleep 2; exec 3>&-');
    try {
      const held = await waitFor('the held file in status', async () => {
        const s = await status();
        return s.mount !== null && s.mount.openFiles >= 1 && s.mount.staged >= 1 ? s : undefined;
      });
      expect(held.mount).toMatchObject({ openFiles: 1, dirty: 1, staged: 1 });
      expect(held.mode).toBe('mount');
      expect(held.reconcile).toBeNull();
    } finally {
      await holder;
    }
    await m.idle();

    const s = await status();
    expect(s).toMatchObject({ state: 'mounted', backend: 'fuse', pending: 0, captured: 4, errors: [], warnings: [] });
    expect(s.lastVersion).toMatchObject({ path: 'held.bin', kind: 'write' });
    expect(s.lastVersion!.versionId).toBe((await m.history('held.bin'))[0]!.versionId);
    expect(s.mount).toMatchObject({ openFiles: 0, dirty: 0, staged: 0 });
    const ops = s.mount!.ops;
    for (const op of ['create', 'write', 'release', 'getattr']) {
      expect(ops[op], op).toBeDefined();
      expect(ops[op]!.count).toBeGreaterThan(0);
      expect(ops[op]!.avgUs).toBeGreaterThan(0);
      // avgUs is totalMs per request, in µs (totalMs is rounded: compare loosely)
      expect(Math.abs((ops[op]!.avgUs * ops[op]!.count) / 1000 - ops[op]!.totalMs)).toBeLessThanOrEqual(1 + ops[op]!.totalMs * 0.01);
    }
    // 200,000 bytes in requests of at most 128 KiB, plus the three small files.
    expect(ops['write']!.count).toBeGreaterThanOrEqual(5);

    // The same document through the CLI (--json), and a readable rendering.
    const json = JSON.parse((await strata(['status', '--json'])).stdout) as { running: boolean; projects: ProjectStatus[] };
    expect(json.running).toBe(true);
    const project = json.projects.find((p) => p.projectId === m.projectId)!;
    expect(project).toMatchObject({ mode: 'mount', captured: 4, mount: { openFiles: 0, staged: 0 }, reconcile: null });
    expect(Object.keys(project.mount!.ops)).toEqual(expect.arrayContaining(['create', 'write', 'release']));
    const human = (await strata(['status'])).stdout;
    expect(human).toMatch(/PENDING\s+CAPTURED/);
    expect(human).toMatch(/mount: 4 versions captured, 0 open files, 0 changed not yet versioned \(0 staged\), 0 pending, 0 errors/);
    expect(human).toMatch(/FUSE OP\s+COUNT\s+AVG µs\s+TOTAL ms/);
    expect(human).toMatch(/\n\s*write\s+\d+\s+\d+\s+\d+/);
  });

  it('names Strata cannot version still work, as plain files without history, and status says so', async () => {
    // A backslash, and a directory with a control character in its name (and a file below it).
    await inMount(m, `printf 'kept' > 'back\\slash.txt' && mkdir "$(printf 'tab\\tdir')" && printf 'below' > "$(printf 'tab\\tdir')/x.txt"`);
    // 'café.txt' twice: NFC (versioned) and NFD (not in NFC: not versionable), two files as on ext4.
    const nfc = `"$(printf 'caf\\303\\251.txt')"`;
    const nfd = `"$(printf 'cafe\\314\\201.txt')"`;
    await inMount(m, `printf 'composed' > ${nfc} && printf 'decomposed' > ${nfd}`);
    await m.idle();
    expect((await inMount(m, `cat 'back\\slash.txt'`)).stdout).toBe('kept');
    expect((await inMount(m, `cat "$(printf 'tab\\tdir')/x.txt"`)).stdout).toBe('below');
    expect((await inMount(m, `cat ${nfc}`)).stdout).toBe('composed');
    expect((await inMount(m, `cat ${nfd}`)).stdout).toBe('decomposed');
    expect((await inMount(m, 'ls | grep -c "^caf"')).stdout.trim()).toBe('2');
    expect((await m.history('caf\u00e9.txt')).length).toBe(1);
    const all = await m.api<{ items: Array<{ path: string }> }>('GET', `/v1/projects/${m.projectId}/history?limit=1000`);
    expect(all.items.length).toBeGreaterThanOrEqual(4);
    expect(all.items.filter((item) => item.path.includes('slash') || item.path.includes('dir'))).toEqual([]);
    const s = await status();
    expect(s.warnings).toEqual([expect.stringMatching(/^3 name\(s\) Strata cannot version .* e\.g\. "back\\\\slash\.txt"$/)]);
    // the directory's file is below an unversionable name: counted once, with its directory
    expect(s.captured).toBe(5);
  });

  it('names a large file whose history the size policy does not keep (issue 13 item 4)', async () => {
    await m.api('PUT', `/v1/projects/${m.projectId}/policy`, { sizeThreshold: 1024 });
    try {
      // The capture thread's engine reads the project's settings at most a second late
      // (engine/context.ts): rewrite the file until a capture has seen the new threshold.
      let round = 0;
      const warned = await waitFor('the warning', async () => {
        round += 1;
        await inMount(m, `head -c ${4096 + round} /dev/zero > scan.tif`);
        await m.idle();
        return (await status()).warnings.find((w) => w.includes('is not kept'));
      }, 30_000);
      expect(warned).toMatch(/history of 1 large file\(s\) is not kept, e\.g\. "scan\.tif".*strata policy allow \.tif/);
    } finally {
      await m.api('PUT', `/v1/projects/${m.projectId}/policy`, { sizeThreshold: 50 * 1024 * 1024 });
    }
  });
});
