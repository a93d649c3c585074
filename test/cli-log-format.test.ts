// `strata daemon` and `strata serve` logs: one readable line per event on a terminal ("12:01:02 INFO
// message key=value"), JSON lines anywhere else, and --log-format to force either. Both are the
// compiled CLI, on a pipe or on a pseudo-terminal (script(1)), with a home of their own.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { painter } from '../cli/color.js';
import { formatLogLine } from '../cli/log-format.js';
import { baseEnv, MAIN, startListening } from './cli-harness.js';
import { waitFor } from './daemon-harness.js';

const PRETTY_LISTENING = /^\d\d:\d\d:\d\d INFO strata daemon listening on (http:\/\/127\.0\.0\.1:\d+) url=\1 home=\S+$/m;

let root: string;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'strata-daemon-logs-'));
  env = { ...baseEnv(join(root, 'config')), STRATA_HOME: join(root, 'home') };
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/**
 * The daemon's stderr once it listens and has logged `ready`; then a clean stop. pino writes JSON
 * asynchronously, so its line may follow the "listening on" line the harness waits for.
 */
async function daemonStderr(extraArgs: string[], ready: RegExp): Promise<string> {
  const daemon = await startListening(['daemon', '--listen', '127.0.0.1:0', ...extraArgs], env);
  try {
    return await waitFor(`the daemon's log line ${ready}`, () => (ready.test(daemon.stderr()) ? daemon.stderr() : undefined), 20_000);
  } finally {
    await stop(daemon.child);
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(killer);
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('strata daemon log format', () => {
  it('writes JSON lines when stderr is not a terminal, and with --log-format json', async () => {
    for (const args of [[], ['--log-format', 'json']]) {
      const stderr = await daemonStderr(args, /^\{.*"msg":"strata daemon listening on/m);
      const records = stderr.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(records.find((record) => String(record['msg']).startsWith('strata daemon listening on'))).toMatchObject({ level: 30, url: expect.stringMatching(/^http:/) });
      expect(stderr).not.toMatch(PRETTY_LISTENING);
    }
  });

  it('writes one readable line per event with --log-format pretty, even on a pipe', async () => {
    const stderr = await daemonStderr(['--log-format', 'pretty'], PRETTY_LISTENING);
    expect(stderr).toMatch(PRETTY_LISTENING);
    expect(stderr).not.toContain('{"level"');
  });

  it('is readable by default on a terminal, and coloured there', async () => {
    const command = `exec '${process.execPath}' '${MAIN}' daemon --listen 127.0.0.1:0 --json`;
    const script = spawn('script', ['-qfec', command, '/dev/null'], { env: { ...env, NO_COLOR: undefined, SHELL: '/bin/sh' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let screen = '';
    script.stdout.on('data', (chunk: Buffer) => {
      screen += chunk.toString('utf8');
    });
    let pid: number | undefined;
    try {
      // --json puts {"url", "home", "pid"} on stdout: the pid is the daemon's, to stop it cleanly.
      pid = await waitFor('the daemon on a terminal', () => {
        const match = /"pid":(\d+)/.exec(screen);
        return match ? Number(match[1]) : undefined;
      }, 30_000);
      const text = screen.replace(/\r/g, '').replaceAll('\x1b', '<ESC>');
      expect(text).toMatch(/^<ESC>\[2m\d\d:\d\d:\d\d<ESC>\[22m INFO strata daemon listening on http:\/\/127\.0\.0\.1:\d+ url=/m);
      expect(text).not.toContain('{"level"');
    } finally {
      if (pid !== undefined && alive(pid)) {
        process.kill(pid, 'SIGTERM');
        await waitFor('the daemon to stop', () => (alive(pid!) ? undefined : true), 20_000);
      }
      script.kill('SIGKILL');
    }
  });

  it('refuses an unknown format (usage, exit 2)', async () => {
    const refused = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [MAIN, 'daemon', '--log-format', 'xml'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      child.on('close', (code) => resolve({ code, stderr }));
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/'xml'.*json, pretty.*\(USAGE\)/);
  });
});

describe('strata serve log format', () => {
  it('logs each request on one readable line with --log-format pretty', async () => {
    const serve = await startListening(['serve', '--home', join(root, 'serve-home'), '--listen', '127.0.0.1:0', '--log-format', 'pretty'], env);
    try {
      const response = await fetch(`${serve.url}/v1/projects`);
      expect(response.status).toBe(401);
      const completed = /^\d\d:\d\d:\d\d INFO request completed requestId=\S+ res\.statusCode=401 responseTime=[\d.]+$/m;
      await waitFor('the request log line', () => (completed.test(serve.stderr()) ? true : undefined), 20_000);
      expect(serve.stderr()).toMatch(/^\d\d:\d\d:\d\d INFO incoming request requestId=\S+ req\.method=GET req\.url=\/v1\/projects /m);
      expect(serve.stderr()).not.toContain('{"level"');
    } finally {
      await stop(serve.child);
    }
  });
});

describe('formatLogLine', () => {
  const plain = painter(false);
  const at = new Date(2026, 10, 26, 9, 5, 7).getTime(); // local time, as the formatter prints it

  it('prints time, level, message and the other fields as key=value on one line', () => {
    const line = JSON.stringify({ level: 40, time: at, pid: 1, hostname: 'h', msg: 'watch limit\nreached', dir: '/home/a b', count: 3, ok: true, err: { type: 'Error', message: 'boom', stack: 'Error: boom\n  at x' } });
    expect(formatLogLine(line, plain)).toBe('09:05:07 WARN watch limit?reached dir="/home/a b" count=3 ok=true err="boom"\n');
  });

  it('writes nested objects as dotted keys', () => {
    const line = JSON.stringify({ level: 30, time: at, msg: 'incoming request', req: { method: 'GET', url: '/v1/projects', headers: { host: 'h' } }, tags: ['a'] });
    expect(formatLogLine(line, plain)).toBe('09:05:07 INFO incoming request req.method=GET req.url=/v1/projects req.headers.host=h tags=["a"]\n');
  });

  it('colours the level on a terminal, and passes a line that is not a JSON object through', () => {
    expect(formatLogLine(JSON.stringify({ level: 50, time: at, msg: 'x' }), painter(true))).toBe('\x1b[2m09:05:07\x1b[22m \x1b[31mERROR\x1b[39m x\n');
    expect(formatLogLine('not json\n', plain)).toBe('not json\n');
    expect(formatLogLine('[1]\n', plain)).toBe('[1]\n');
  });
});
