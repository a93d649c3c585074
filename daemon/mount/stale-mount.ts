// Stale mounts: a mount process killed with SIGKILL leaves its mount point attached to a dead FUSE
// connection — every access fails with ENOTCONN ("Transport endpoint is not connected") and a new
// mount on top fails. We detect that at start and detach it.
//
// Never a synchronous child process here: a process that serves a FUSE mount and blocks its event
// loop in execSync can deadlock (the child touches the mount, the kernel waits for our loop). Every
// helper is spawned asynchronously, without a shell, with a timeout.
import { spawn } from 'node:child_process';
import { readFile, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { StrataError } from '../../engine/errors.js';

export interface MountInfo {
  mountPoint: string;
  fsType: string;
  /** the connection number under /sys/fs/fuse/connections (the device minor) */
  connection: number;
}

const HELPER_TIMEOUT_MS = 10_000;
const PROBE_TIMEOUT_MS = 5_000;

/** `\040` and friends: mountinfo escapes space, tab, newline and backslash as octal. */
function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/** The mounts at `mountPoint` (innermost last), from /proc/self/mountinfo. */
export async function mountsAt(mountPoint: string): Promise<MountInfo[]> {
  let text: string;
  try {
    text = await readFile('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const found: MountInfo[] = [];
  for (const line of text.split('\n')) {
    // id parent major:minor root mountpoint options [optional...] - fstype source superoptions
    const fields = line.split(' ');
    if (fields.length < 10) continue;
    if (unescapeMountField(fields[4]!) !== mountPoint) continue;
    const dash = fields.indexOf('-', 6);
    const minor = Number(fields[2]!.split(':')[1]);
    found.push({ mountPoint, fsType: dash > 0 ? (fields[dash + 1] ?? '') : '', connection: minor });
  }
  return found;
}

/** Runs a helper without a shell; resolves with its exit code (or null when it timed out / failed to start). */
export function runHelper(command: string, args: string[], timeoutMs = HELPER_TIMEOUT_MS): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    let stderr = '';
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: timeoutMs, killSignal: 'SIGKILL' });
    } catch (error) {
      resolve({ code: null, stderr: String(error) });
      return;
    }
    child.stderr?.on('data', (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString();
    });
    child.on('error', (error) => resolve({ code: null, stderr: stderr + String(error) }));
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

/** Lazy unmount: `fusermount -uz`, falling back to `umount -l` (root, or fusermount missing). */
export async function detachMount(mountPoint: string): Promise<void> {
  const fusermount = await runHelper('fusermount', ['-uz', mountPoint]);
  if (fusermount.code === 0) return;
  const umount = await runHelper('umount', ['-l', mountPoint]);
  if (umount.code === 0) return;
  // Already gone counts as success: the caller wanted it detached.
  if ((await mountsAt(mountPoint)).length === 0) return;
  throw new StrataError('STORAGE_ERROR', {
    message: `Could not unmount ${mountPoint}: ${(fusermount.stderr || umount.stderr).trim()}`,
    details: { mountPoint },
  });
}

/**
 * Processes blocked on a dead connection are released by aborting it (fusectl). Best effort: the
 * kernel aborts the connection itself once the dead server's /dev/fuse descriptor is closed, which a
 * SIGKILL does; this covers a descriptor that survived in a forked child.
 */
async function abortConnection(connection: number): Promise<void> {
  try {
    await writeFile(join('/sys/fs/fuse/connections', String(connection), 'abort'), '1');
  } catch {
    // fusectl not mounted or the connection already gone: nothing to abort.
  }
}

export type StaleCheck = { kind: 'none' } | { kind: 'cleaned' } | { kind: 'live' };

/**
 * Cleans a dead FUSE mount at `mountPoint`. A LIVE mount (another process still serves it) is left
 * alone and reported, so starting twice never tears down the first mount.
 */
export async function cleanStaleMount(mountPoint: string): Promise<StaleCheck> {
  const mounts = (await mountsAt(mountPoint)).filter((m) => m.fsType.startsWith('fuse'));
  if (mounts.length === 0) return { kind: 'none' };
  // A statfs that does not answer means a live server that is stuck (e.g. stopped): not ours to tear
  // down. statfs, not stat: the kernel answers a stat of the root from its attribute cache even once
  // the connection is gone, so a daemon restarted right after a kill -9 took its own dead mount for
  // another process's (PROJECT_DIR_TAKEN, the sync model's seeds 45002 and 45003); FUSE_STATFS is
  // never cached and fails with ENOTCONN on a dead connection.
  const probe = await Promise.race([
    statfs(mountPoint).then(
      () => 'ok',
      (error: NodeJS.ErrnoException) => error.code ?? 'error',
    ),
    new Promise<string>((resolve) => setTimeout(resolve, PROBE_TIMEOUT_MS, 'timeout').unref()),
  ]);
  if (probe !== 'ENOTCONN' && probe !== 'ECONNABORTED') return { kind: 'live' };
  for (const mount of mounts) await abortConnection(mount.connection);
  for (let i = 0; i < mounts.length; i++) await detachMount(mountPoint);
  return { kind: 'cleaned' };
}
