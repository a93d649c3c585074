// /readyz on Postgres + S3 names the backend that fails. The objects check probes the bucket itself:
// through the tier of small objects in Postgres (pg-small-objects.ts) it asked Postgres first, and a
// database outage read as the bucket's too.

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startServer } from '../server/serve.js';
import { createTestSchema } from './helpers/postgres.js';
import { startS3Server } from './helpers/s3-server.js';

describe('/readyz on Postgres and S3', () => {
  it('with the database gone and the bucket up, blames the database only', async () => {
    const home = await mkdtemp(join(tmpdir(), 'strata-readyz-'));
    const schema = await createTestSchema('strata_ready');
    const s3 = await startS3Server();
    try {
      const server = await startServer({
        home,
        listen: '127.0.0.1:0',
        logger: false,
        env: {
          STRATA_DATABASE_URL: schema.url,
          STRATA_OBJECTS_URL: s3.url,
          AWS_ACCESS_KEY_ID: s3.accessKeyId,
          AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
          STRATA_PEPPER: randomBytes(32).toString('hex'),
        },
      });
      try {
        const ready = await fetch(`${server.url}/readyz`);
        expect(ready.status).toBe(200);
        expect(await ready.json()).toStrictEqual({ ready: true, checks: { metadata: 'ok', objects: 'ok' } });
        // The database "goes down": every query of this server now fails (its tables are gone).
        await schema.drop();
        const down = await fetch(`${server.url}/readyz`);
        expect(down.status).toBe(503);
        const body = (await down.json()) as { error: { code: string; details: { checks: Record<string, string> } } };
        expect(body.error.code).toBe('NOT_READY');
        expect(body.error.details.checks.objects).toBe('ok');
        expect(body.error.details.checks.metadata).not.toBe('ok');
      } finally {
        await server.close();
      }
    } finally {
      await s3.close();
      await schema.drop();
      await rm(home, { recursive: true, force: true });
    }
  }, 60_000);
});
