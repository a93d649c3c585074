// A mount whose server was killed is stale, even while the kernel still answers a stat of its root
// from its attribute cache (the sync model's seeds 45002 and 45003: a daemon restarted right after
// `kill -9` refused its own dead mount as "already mounted (another process serves it)",
// PROJECT_DIR_TAKEN, and the project never came back). bindfs stands in for the killed server: the
// kernel's caching is the same for any FUSE server. Needs root and bindfs.
import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanStaleMount, mountsAt } from '../daemon/mount/stale-mount.js';
import { waitFor } from './daemon-harness.js';

const run = promisify(execFile);
const asRoot = process.getuid?.() === 0;
let root: string | undefined;
let mountPoint: string | undefined;

afterEach(async () => {
  if (mountPoint !== undefined) await run('fusermount3', ['-uz', mountPoint]).catch(() => undefined);
  if (root !== undefined) await rm(root, { recursive: true, force: true });
  root = mountPoint = undefined;
});

describe.skipIf(!asRoot)('the stale-mount probe', () => {
  it('takes a mount whose server died for stale while its root is still in the attribute cache, and cleans it', { timeout: 60_000 }, async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-stale-probe-'));
    const source = join(root, 'source');
    mountPoint = join(root, 'mnt');
    await mkdir(source);
    await mkdir(mountPoint);
    // -f: bindfs stays in the foreground, so its pid is the server's.
    const server = spawn('bindfs', ['-f', '-o', 'attr_timeout=60', source, mountPoint], { stdio: 'ignore' });
    await waitFor('the bindfs mount', async () => ((await mountsAt(mountPoint!)).some((m) => m.fsType.startsWith('fuse')) ? true : undefined), 20_000);
    await stat(mountPoint); // the root's attributes in the kernel's cache
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGKILL');
    await exited;
    // What fooled the probe: the dead mount's root still answers a stat.
    expect((await stat(mountPoint)).isDirectory()).toBe(true);
    expect(await cleanStaleMount(mountPoint)).toEqual({ kind: 'cleaned' });
    expect((await mountsAt(mountPoint)).filter((m) => m.fsType.startsWith('fuse'))).toEqual([]);
  });
});
