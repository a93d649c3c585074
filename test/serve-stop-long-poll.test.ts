// `strata serve` stopped while workstations hold sync long polls (waitMs up to 30 s): SIGTERM must
// still finish the requests in flight and exit 0 (README, Running the server). A poll left waiting
// outlasted the 10 s stop timeout, and the process exited 1 with "stop timed out, exiting".

import { Agent, request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { parseJson, runCli, servedHome } from './cli-harness.js';

describe('serve stop with sync long polls in flight', () => {
  it('SIGTERM answers a waiting long poll at once (an empty page) and exits 0 well within the stop timeout', async () => {
    const served = await servedHome('strata-stop-poll-');
    try {
      const created = await runCli(['project', 'create', 'polled', '--json'], served.env);
      expect(created.code, created.stderr).toBe(0);
      const projectId = parseJson<{ projectId: string }>(created).projectId;
      const url = new URL(`${served.server.url}/v1/projects/${projectId}/sync/changes?waitMs=25000`);
      const answer = new Promise<{ status: number; body: string; at: number }>((resolve, reject) => {
        const poll = httpRequest(url, {
          // A workstation keeps its connection (as the daemon's fetch does).
          agent: new Agent({ keepAlive: true, timeout: 60_000 }),
          headers: { authorization: `Bearer ${served.apiKey}` },
        });
        poll.on('response', (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => {
            body += chunk.toString();
          });
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body, at: Date.now() }));
        });
        poll.on('error', reject);
        poll.end();
      });
      // Nothing in the project: the server is waiting on the poll well before this (a local round trip).
      const early = await Promise.race([answer, new Promise<null>((resolve) => setTimeout(() => resolve(null), 1_500))]);
      expect(early, 'the poll answered before the signal').toBeNull();
      const signalled = Date.now();
      served.server.child.kill('SIGTERM');
      const result = await answer;
      expect(result.status, result.body).toBe(200);
      expect(JSON.parse(result.body)).toMatchObject({ items: [], more: false });
      // Answered by the stop, not by its 25 s timeout.
      expect(result.at - signalled).toBeLessThan(3_000);
      expect(await served.server.exited, served.server.stderr()).toBe(0);
      // Well within the 10 s stop timeout (which exits 1).
      expect(Date.now() - signalled).toBeLessThan(5_000);
      expect(served.server.stderr()).not.toContain('stop timed out');
    } finally {
      await served.dispose();
    }
  }, 60_000);
});
