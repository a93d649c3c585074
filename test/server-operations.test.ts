// What a platform team needs of `strata serve` beyond the API: readiness that reflects the storage,
// and more than one organization per server.

import { readdir, stat, writeFile } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { baseEnv, parseJson, runCli, servedHome, tempDir } from './cli-harness.js';
import { openHarness } from './control-api-harness.js';

describe('server operations', () => {
  it('/readyz answers 200 while the metadata database and the object store answer, 503 NOT_READY when one does not', async () => {
    const h = await openHarness({ readyz: true });
    let closed = false;
    try {
      const ready = await h.request('GET', '/readyz', { key: null });
      expect(ready.statusCode).toBe(200);
      expect(ready.json()).toStrictEqual({ ready: true, checks: { metadata: 'ok', objects: 'ok' } });
      await h.local.repository.close();
      closed = true;
      const down = await h.request('GET', '/readyz', { key: null });
      expect(down.statusCode).toBe(503);
      expect(down.json().error).toMatchObject({ code: 'NOT_READY', details: { checks: { objects: 'ok' } } });
      expect(down.json().error.details.checks.metadata).not.toBe('ok');
      // Liveness is not readiness: the process still answers.
      expect((await h.request('GET', '/healthz', { key: null })).statusCode).toBe(200);
    } finally {
      await h.dispose().catch((error: unknown) => {
        if (!closed) throw error;
      });
    }
  });

  it('the operator creates more organizations; each owner key sees its own organization only', async () => {
    const served = await servedHome('strata-orgs-');
    try {
      const home = join(served.dir.path, 'home');
      expect(parseJson<{ ready: boolean }>(await runCli(['--json', 'admin', 'org', 'list', '--home', home], served.env))).toMatchObject({ items: [{ name: 'local' }] });
      const created = await runCli(['admin', 'org', 'create', 'Physics', '--home', home, '--json'], served.env);
      expect(created.code, created.stderr).toBe(0);
      const physics = parseJson<{ apiKey: string; orgId: string }>(created);
      expect((await fetch(`${served.server.url}/readyz`)).status).toBe(200);
      const me = await runCli(['whoami', '--json'], { ...served.env, STRATA_API_KEY: physics.apiKey });
      expect(parseJson<{ organizations: Array<{ orgId: string; name: string; role: string }> }>(me).organizations).toStrictEqual([{ orgId: physics.orgId, name: 'Physics', role: 'owner' }]);
      const project = await runCli(['project', 'create', 'optics', '--json'], { ...served.env, STRATA_API_KEY: physics.apiKey });
      expect(project.code, project.stderr).toBe(0);
      const theirs = parseJson<{ projectId: string }>(project).projectId;
      // The first organization's owner does not see it.
      expect((await runCli(['project', 'show', '--project', theirs], served.env)).code).toBe(3);
      const listed = parseJson<{ items: Array<{ name: string }> }>(await runCli(['admin', 'org', 'list', '--home', home, '--json'], served.env));
      expect(listed.items.map((o) => o.name).sort()).toStrictEqual(['Physics', 'local']);
    } finally {
      await served.dispose();
    }
  });

  it('Prometheus metrics on their own address: requests by route pattern and status, versions written, process figures', async () => {
    const served = await servedHome('strata-metrics-', { STRATA_METRICS_LISTEN: '127.0.0.1:0' });
    try {
      // A plain line, or a JSON log record's msg (the default on a pipe): the URL ends at a quote.
      const metricsUrl = /metrics on (http[^\s"]+)/.exec(served.server.stderr())?.[1];
      expect(metricsUrl).toBeDefined();
      const created = await runCli(['project', 'create', 'measured', '--json'], served.env);
      const projectId = parseJson<{ projectId: string }>(created).projectId;
      const file = join(served.dir.path, 'r.txt');
      await writeFile(file, 'twelve bytes');
      expect((await runCli(['put', file, 'r.txt', '--project', projectId], served.env)).code).toBe(0);
      await runCli(['project', 'show', '--project', 'no-such-project'], served.env);
      const text = await (await fetch(metricsUrl!)).text();
      expect(text).toContain('strata_http_requests_total{method="PUT",route="/v1/projects/:projectId/fs/write",status="201"} 1');
      expect(text).toContain('strata_http_requests_total{method="GET",route="/v1/projects/:projectId",status="404"} 1');
      expect(text).toContain('strata_http_request_duration_seconds_bucket{le="+Inf",method="PUT",route="/v1/projects/:projectId/fs/write",status="201"} 1');
      expect(text).toContain('strata_http_request_duration_seconds_count{method="PUT",route="/v1/projects/:projectId/fs/write",status="201"} 1');
      expect(text).toContain('strata_versions_written_total 1');
      expect(text).toContain('strata_version_bytes_written_total 12');
      expect(text).toContain('strata_process_cpu_user_seconds_total');
      // Never a concrete id as a label, and nothing of this on the API's own port.
      expect(text).not.toContain(projectId);
      expect((await fetch(`${served.server.url}/metrics`)).status).toBe(404);
    } finally {
      await served.dispose();
    }
  });

  it('serve --migrate-only brings a home to the current schema once, even when two run at once', async () => {
    const dir = await tempDir('strata-migrate-');
    try {
      const home = join(dir.path, 'home');
      const env = baseEnv(join(dir.path, 'config'));
      const [a, b] = await Promise.all([0, 1].map(() => runCli(['serve', '--migrate-only', '--home', home, '--json'], env)));
      expect(a!.code, a!.stderr).toBe(0);
      expect(b!.code, b!.stderr).toBe(0);
      const results = [parseJson<{ schemaVersion: number; applied: number[] }>(a!), parseJson<{ schemaVersion: number; applied: number[] }>(b!)];
      const latest = results[0]!.schemaVersion;
      // One of them applied every migration, the other found the schema current.
      expect(results.map((r) => r.applied.length).sort((x, y) => x - y)).toStrictEqual([0, latest]);
      const again = await runCli(['serve', '--migrate-only', '--home', home], env);
      expect(again.stdout).toContain(`metadata schema at version ${latest} (already current)`);
      expect((await runCli(['admin', 'bootstrap', '--home', home], env)).code).toBe(0);
    } finally {
      await dir.remove();
    }
  });

  it('SIGTERM drains: an upload in flight completes and is kept, then the process exits 0 at once', async () => {
    const served = await servedHome('strata-drain-');
    try {
      const projectId = parseJson<{ projectId: string }>(await runCli(['project', 'create', 'drained', '--json'], served.env)).projectId;
      const size = 8 * 1024 * 1024;
      const url = new URL(`${served.server.url}/v1/projects/${projectId}/fs/write?path=big.bin`);
      let pendingRest: () => void = () => {};
      const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
        const upload = httpRequest(url, {
          // A client that keeps an idle connection for a minute (as browsers and proxies do).
          agent: new Agent({ keepAlive: true, timeout: 60_000 }),
          method: 'PUT',
          headers: { authorization: `Bearer ${served.apiKey}`, 'content-type': 'application/octet-stream', 'content-length': String(size) },
        });
        upload.on('response', (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => {
            body += chunk.toString();
          });
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        });
        upload.on('error', reject);
        // Half now; the other half once the server is shutting down.
        upload.write(Buffer.alloc(size / 2, 1));
        pendingRest = () => upload.end(Buffer.alloc(size / 2, 2));
      });
      // The server is inside the upload once its staging file has bytes.
      const tmp = join(served.dir.path, 'home', 'store', 'tmp');
      const deadline = Date.now() + 20_000;
      for (;;) {
        const sizes = await Promise.all((await readdir(tmp)).map(async (name) => (await stat(join(tmp, name)).catch(() => ({ size: 0 }))).size));
        if (sizes.some((bytes) => bytes > 0)) break;
        if (Date.now() > deadline) throw new Error('the upload never reached the server');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const signalled = Date.now();
      served.server.child.kill('SIGTERM');
      pendingRest();
      const result = await answer;
      expect(result.status, result.body).toBe(201);
      expect(JSON.parse(result.body)).toMatchObject({ version: { path: 'big.bin', size } });
      expect(await served.server.exited).toBe(0);
      // Not held open by the client's idle keep-alive connection (the answer closed it).
      expect(Date.now() - signalled).toBeLessThan(30_000);
    } finally {
      await served.dispose();
    }
  });

  it('org create on a home nobody bootstrapped says what to run first', async () => {
    const dir = await tempDir('strata-orgs-empty-');
    try {
      const result = await runCli(['admin', 'org', 'create', 'X', '--home', join(dir.path, 'home')], baseEnv(join(dir.path, 'config')));
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain('strata admin bootstrap');
    } finally {
      await dir.remove();
    }
  });
});
