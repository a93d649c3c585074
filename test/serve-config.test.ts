// `strata serve` configured as a platform team would: a JSON config file with secrets in files,
// HTTPS with its own certificate, and mistakes refused by name.

import { type ChildProcess, execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { baseEnv, parseJson, runCli, startListening, tempDir } from './cli-harness.js';

const run = promisify(execFile);

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

function httpsGet(url: string, ca: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, { ca }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

describe('serve configuration', () => {
  it('a config file sets home, listen, environment, limits and metrics; the pepper comes from a file', async () => {
    const dir = await tempDir('strata-serve-config-');
    try {
      const home = join(dir.path, 'home');
      const pepperFile = join(dir.path, 'pepper');
      await writeFile(pepperFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
      const env = baseEnv(join(dir.path, 'config'));
      const boot = await runCli(['admin', 'bootstrap', '--home', home, '--environment', 'prod', '--json'], { ...env, STRATA_PEPPER_FILE: pepperFile });
      expect(boot.code, boot.stderr).toBe(0);
      const apiKey = parseJson<{ apiKey: string }>(boot).apiKey;
      expect(apiKey).toMatch(/^rk\.prod\./);
      const config = join(dir.path, 'server.json');
      await writeFile(
        config,
        JSON.stringify({ home, listen: '127.0.0.1:0', environment: 'prod', pepperFile, rateLimit: '3/10s', metricsListen: '127.0.0.1:0', trustedProxies: ['10.0.0.0/8'] }),
      );
      const server = await startListening(['serve', '--config', config, '--quiet'], env);
      try {
        expect(server.stderr()).toContain(`serving ${home}`);
        expect(server.stderr()).toMatch(/metrics on http:\/\/127\.0\.0\.1:\d+\/metrics/);
        const call = () => fetch(`${server.url}/v1/projects`, { headers: { authorization: `Bearer ${apiKey}` } });
        // The key made with the pepper of the file authenticates; the limit of the file applies.
        for (let i = 0; i < 3; i += 1) expect((await call()).status).toBe(200);
        expect((await call()).status).toBe(429);
      } finally {
        await stop(server.child);
      }
      // The pepper never reaches a log line.
      expect(server.stderr()).not.toContain((await readFile(pepperFile, 'utf8')).trim());
    } finally {
      await dir.remove();
    }
  });

  it('refuses an unknown setting, a missing secret file and half of a TLS pair, by name', async () => {
    const dir = await tempDir('strata-serve-config-bad-');
    try {
      const env = baseEnv(join(dir.path, 'config'));
      const config = join(dir.path, 'server.json');
      await writeFile(config, JSON.stringify({ home: join(dir.path, 'home'), listn: '0.0.0.0:7420' }));
      const typo = await runCli(['serve', '--config', config], env);
      expect(typo.code).not.toBe(0);
      expect(typo.stderr).toContain("unknown setting 'listn'");
      await writeFile(config, JSON.stringify({ home: join(dir.path, 'home'), pepperFile: join(dir.path, 'nope') }));
      const missing = await runCli(['serve', '--config', config], env);
      expect(missing.stderr).toMatch(/cannot read STRATA_PEPPER_FILE .*nope \(ENOENT\)/);
      const half = await runCli(['serve', '--home', join(dir.path, 'home'), '--listen', '127.0.0.1:0', '--tls-cert', config], env);
      expect(half.code).not.toBe(0);
      expect(half.stderr).toContain('HTTPS needs both --tls-cert and --tls-key');
    } finally {
      await dir.remove();
    }
  });

  it('serves HTTPS with the given certificate', async () => {
    const dir = await tempDir('strata-serve-tls-');
    try {
      const cert = join(dir.path, 'tls.crt');
      const key = join(dir.path, 'tls.key');
      await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert]);
      const env = baseEnv(join(dir.path, 'config'));
      const server = await startListening(['serve', '--home', join(dir.path, 'home'), '--listen', '127.0.0.1:0', '--tls-cert', cert, '--tls-key', key, '--quiet'], env);
      try {
        expect(server.url).toMatch(/^https:\/\//);
        const health = await httpsGet(`${server.url}/healthz`, await readFile(cert));
        expect(health).toStrictEqual({ status: 200, body: '{"ok":true}' });
      } finally {
        await stop(server.child);
      }
    } finally {
      await dir.remove();
    }
  });
});
