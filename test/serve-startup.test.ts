// `strata serve` when its start goes wrong: a bad or busy address (named by its own flag, nothing left
// listening), a bucket that accepts connections and never answers (bounded, and SIGTERM still stops
// the start), a TLS file that is no PEM, a database password on the command line, and the lifecycle
// lines under --log-format json. The compiled CLI, as operators run it.

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { baseEnv, MAIN, runCli, startListening, tempDir } from './cli-harness.js';
import { waitFor } from './daemon-harness.js';
import { createTestSchema } from './helpers/postgres.js';

const run = promisify(execFile);

async function occupiedPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as { port: number }).port, server };
}

async function closeServer(server: Server): Promise<void> {
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** A TCP server that accepts connections and never answers: a hung S3 endpoint. */
async function silentEndpoint(): Promise<{ endpoint: string; connections: () => number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    endpoint: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    connections: () => connections,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await closeServer(server);
    },
  };
}

/** Nothing accepts connections on the port any more. */
async function refused(port: number): Promise<boolean> {
  try {
    await fetch(`http://127.0.0.1:${port}/healthz`);
    return false;
  } catch {
    return true;
  }
}

const S3_SECRET = 's3-secret-never-printed-0123456789';
/** The machine's Redis (README: the tests use it for the shared rate limits); only with a rate limit, which loopback has off by default. */
const REDIS = 'redis://127.0.0.1:6379';

describe('strata serve start-up failures', () => {
  it('a bad metrics address (environment, config file or flag) exits before anything listens', async () => {
    const dir = await tempDir('strata-serve-metrics-bad-');
    try {
      const env = baseEnv(join(dir.path, 'config'));
      const { port, server } = await occupiedPort();
      await closeServer(server); // a free port: serve would listen on it
      const home = join(dir.path, 'home');
      const fromEnv = await runCli(['serve', '--home', home, '--listen', `127.0.0.1:${port}`], { ...env, STRATA_METRICS_LISTEN: 'nonsense' }, { timeoutMs: 15_000 });
      const config = join(dir.path, 'server.json');
      await writeFile(config, JSON.stringify({ home, listen: `127.0.0.1:${port}`, metricsListen: 'nonsense' }));
      const fromConfig = await runCli(['serve', '--config', config], env, { timeoutMs: 15_000 });
      for (const result of [fromEnv, fromConfig]) {
        expect(result.signal, result.stderr).toBeNull(); // exited, not killed by runCli's timeout
        expect(result.code, result.stderr).toBe(6);
        expect(result.stderr).toContain("the metrics address (metricsListen, STRATA_METRICS_LISTEN) must be HOST:PORT, got 'nonsense' (INVALID_ARGUMENT)");
        expect(result.stderr).not.toMatch(/listening on/);
      }
      expect(await refused(port)).toBe(true);
      const flag = await runCli(['serve', '--home', home, '--listen', '127.0.0.1:0', '--metrics-listen', 'foo'], env);
      expect(flag.code).toBe(2);
      expect(flag.stderr).toContain("--metrics-listen must be HOST:PORT, got 'foo' (USAGE)");
    } finally {
      await dir.remove();
    }
  }, 60_000);

  it('a busy address is named with its own flag, and nothing is left listening', async () => {
    const dir = await tempDir('strata-serve-busy-');
    const busy = await occupiedPort();
    try {
      const env = baseEnv(join(dir.path, 'config'));
      const free = await occupiedPort();
      await closeServer(free.server);
      const metrics = await runCli(['serve', '--home', join(dir.path, 'home'), '--listen', `127.0.0.1:${free.port}`, '--metrics-listen', `127.0.0.1:${busy.port}`], env, { timeoutMs: 15_000 });
      expect(metrics.code, metrics.stderr).toBe(1);
      expect(metrics.stderr).toContain(`cannot listen on 127.0.0.1:${busy.port} (--metrics-listen): the address is in use`);
      expect(metrics.stderr).toContain('(LISTEN_FAILED)');
      const errorLine = metrics.stderr.split('\n').find((line) => line.includes('LISTEN_FAILED'));
      expect(errorLine).not.toContain(`127.0.0.1:${free.port}`);
      expect(await refused(free.port)).toBe(true);
      const api = await runCli(['serve', '--home', join(dir.path, 'home'), '--listen', `127.0.0.1:${busy.port}`], env, { timeoutMs: 15_000 });
      expect(api.code, api.stderr).toBe(1);
      expect(api.stderr).toContain(`cannot listen on 127.0.0.1:${busy.port} (--listen): the address is in use`);
    } finally {
      await closeServer(busy.server);
      await dir.remove();
    }
  }, 60_000);

  describe('a bucket that accepts connections and never answers', () => {
    const s3Env = (dir: string, endpoint: string): NodeJS.ProcessEnv => ({
      ...baseEnv(join(dir, 'config')),
      STRATA_OBJECTS_URL: `s3://hung-bucket?endpoint=${endpoint}&region=us-east-1`,
      AWS_ACCESS_KEY_ID: 'AKIDHUNG',
      AWS_SECRET_ACCESS_KEY: S3_SECRET,
    });

    it('fails the start within its bound, naming the endpoint and not the secret', async () => {
      const dir = await tempDir('strata-serve-hung-s3-');
      const hung = await silentEndpoint();
      try {
        const started = Date.now();
        // With --redis too: its connection, made before the bucket check, must not keep the process alive.
        const result = await runCli(['serve', '--home', join(dir.path, 'home'), '--listen', '127.0.0.1:0', '--rate-limit', '100/10s', '--redis', REDIS], s3Env(dir.path, hung.endpoint), { timeoutMs: 40_000 });
        expect(result.signal, result.stderr).toBeNull();
        expect(result.code).not.toBe(0);
        expect(Date.now() - started).toBeLessThan(30_000);
        expect(result.stderr).toContain(`S3 HeadBucket failed for bucket "hung-bucket" at ${hung.endpoint}: no answer within 15 s (STORAGE_ERROR)`);
        expect(result.stderr).not.toContain(S3_SECRET);
        expect(hung.connections()).toBeGreaterThan(0);
      } finally {
        await hung.close();
        await dir.remove();
      }
    }, 60_000);

    it('SIGTERM during the start exits promptly, non-zero', async () => {
      const dir = await tempDir('strata-serve-hung-sigterm-');
      const hung = await silentEndpoint();
      let child: ChildProcess | undefined;
      try {
        child = spawn(process.execPath, [MAIN, 'serve', '--home', join(dir.path, 'home'), '--listen', '127.0.0.1:0', '--log-format', 'pretty'], {
          env: s3Env(dir.path, hung.endpoint),
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr!.on('data', (chunk: Buffer) => {
          stderr += chunk.toString('utf8');
        });
        const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
        // The start is under way once the bucket check has connected.
        await waitFor('the bucket check to connect', () => (hung.connections() > 0 ? true : undefined), 20_000);
        const signalled = Date.now();
        child.kill('SIGTERM');
        const code = await Promise.race([exited, new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 8_000))]);
        expect(code, stderr).toBe(1);
        expect(Date.now() - signalled).toBeLessThan(8_000);
        expect(stderr).toContain('strata: SIGTERM during start-up, stopping');
      } finally {
        if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await hung.close();
        await dir.remove();
      }
    }, 60_000);
  });

  it('a TLS file that is no PEM certificate or key is refused by name, never by content', async () => {
    const dir = await tempDir('strata-serve-tls-bad-');
    try {
      const env = baseEnv(join(dir.path, 'config'));
      const cert = join(dir.path, 'tls.crt');
      const key = join(dir.path, 'tls.key');
      const otherKey = join(dir.path, 'other.key');
      await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-keyout', key, '-out', cert]);
      await run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', otherKey]);
      const bad = join(dir.path, 'bad.pem');
      const content = 'this-is-no-pem-0123456789';
      await writeFile(bad, `${content}\n`);
      const cases: Array<[string, string, string]> = [
        [bad, bad, `--tls-cert ${bad} is not a PEM certificate`],
        [cert, bad, `--tls-key ${bad} is not a PEM private key`],
        [cert, otherKey, `the key in --tls-key ${otherKey} does not go with the certificate in --tls-cert ${cert}`],
      ];
      for (const [certFile, keyFile, message] of cases) {
        // With --redis too: the refusal must come before (or close) its connection, or the process stays.
        const result = await runCli(['serve', '--home', join(dir.path, 'home'), '--listen', '127.0.0.1:0', '--tls-cert', certFile, '--tls-key', keyFile, '--rate-limit', '100/10s', '--redis', REDIS], env, { timeoutMs: 15_000 });
        expect(result.signal, result.stderr).toBeNull();
        expect(result.code, result.stderr).toBe(6);
        expect(result.stderr).toContain(message);
        expect(result.stderr).toMatch(/\(INVALID_ARGUMENT\)\n$/);
        expect(result.stderr).not.toContain(content);
        expect(result.stderr).not.toContain('PRIVATE KEY');
      }
    } finally {
      await dir.remove();
    }
  }, 60_000);

  it('warns of a database password on the command line, without printing it', async () => {
    const dir = await tempDir('strata-serve-db-password-');
    const schema = await createTestSchema('strata_pw');
    try {
      const env = baseEnv(join(dir.path, 'config'));
      // Trust authentication ignores the password.
      const password = 'pw-on-the-command-line-4242';
      const inUserinfo = new URL(schema.url);
      inUserinfo.password = password;
      const inQuery = new URL(schema.url);
      inQuery.searchParams.set('password', password);
      for (const url of [inUserinfo, inQuery]) {
        const result = await runCli(['serve', '--migrate-only', '--home', join(dir.path, 'home'), '--database', url.toString(), '--log-format', 'pretty'], env, { timeoutMs: 30_000 });
        expect(result.code, result.stderr).toBe(0);
        expect(result.stderr).toContain('strata: warning: --database puts the database password in your shell history and process list; prefer STRATA_DATABASE_URL_FILE');
        expect(result.stderr + result.stdout).not.toContain(password);
      }
      const without = await runCli(['serve', '--migrate-only', '--home', join(dir.path, 'home'), '--database', schema.url], env, { timeoutMs: 30_000 });
      expect(without.code, without.stderr).toBe(0);
      expect(without.stderr).not.toContain('warning');
    } finally {
      await schema.drop();
      await dir.remove();
    }
  }, 60_000);

  it('with --log-format json every line on stderr is a JSON record, the URL and the signal included', async () => {
    const dir = await tempDir('strata-serve-json-lines-');
    try {
      const env = baseEnv(join(dir.path, 'config'));
      const home = join(dir.path, 'home');
      const server = await startListening(['serve', '--home', home, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--log-format', 'json'], env);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      const exited = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));
      server.child.kill('SIGTERM');
      expect(await exited).toBe(0);
      const lines = server.stderr().split('\n').filter((line) => line !== '');
      for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
      const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(records).toContainEqual(expect.objectContaining({ level: 30, msg: `serving ${home}`, home }));
      expect(records).toContainEqual(expect.objectContaining({ level: 30, msg: `listening on ${server.url}`, url: server.url }));
      expect(records).toContainEqual(expect.objectContaining({ level: 30, msg: expect.stringMatching(/^metrics on http:\/\/127\.0\.0\.1:\d+\/metrics$/) }));
      expect(records).toContainEqual(expect.objectContaining({ level: 30, msg: 'SIGTERM, closing (finishing requests in flight)...' }));
      // The pretty format keeps the plain lines scripts read.
      const pretty = await startListening(['serve', '--home', home, '--listen', '127.0.0.1:0', '--log-format', 'pretty', '--quiet'], env);
      const prettyExited = new Promise<number | null>((resolve) => pretty.child.once('exit', (code) => resolve(code)));
      pretty.child.kill('SIGTERM');
      expect(await prettyExited).toBe(0);
      expect(pretty.stderr()).toMatch(new RegExp(`^strata: serving ${home}\nlistening on http://127\\.0\\.0\\.1:\\d+\n`));
      expect(pretty.stderr()).toContain('strata: SIGTERM, closing (finishing requests in flight)...\n');
    } finally {
      await dir.remove();
    }
  }, 60_000);
});
