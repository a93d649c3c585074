// s3rver for the benchmarks: test/helpers/s3-server.ts (a child process on 127.0.0.1 with one bucket
// and a random key pair), with its directory under a parent the benchmark chooses, on the same disk as
// the Strata homes (BENCH_TMP), and known, so the benchmark can find the server's process and move its
// many small files aside (env.ts, trash) instead of deleting them between trials.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type S3Server, startS3Server } from '../../test/helpers/s3-server.js';

export interface BenchS3Server extends S3Server {
  /** the directory given: s3rver's own (strata-s3rver-XXXX) is inside it */
  parent: string;
  /** the s3rver child process, or null if it could not be found */
  pid: number | null;
}

/**
 * Starts s3rver with its directory in `parent` (created). The helper makes its directory with
 * mkdtemp(os.tmpdir()), so TMPDIR points there for the call: tmpdir() is read synchronously at its
 * start, and nothing else of this process uses it meanwhile.
 */
export async function startBenchS3Server(parent: string): Promise<BenchS3Server> {
  mkdirSync(parent, { recursive: true });
  const before = new Set(s3rverChildren());
  const saved = process.env['TMPDIR'];
  process.env['TMPDIR'] = parent;
  let started: Promise<S3Server>;
  try {
    started = startS3Server();
  } finally {
    if (saved === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = saved;
  }
  const server = await started;
  const pid = s3rverChildren().find((p) => !before.has(p)) ?? null;
  return Object.assign(server, { parent, pid });
}

/** Children of this process whose command line is the s3rver child's source. */
function s3rverChildren(): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      if (!readFileSync(join('/proc', name, 'cmdline'), 'utf8').includes('S3RVER_MAIN')) continue;
      found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}
