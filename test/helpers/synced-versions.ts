// Versions as a workstation sends them to `POST sync/versions` (issue 14), for tests that drive the
// server's side of sync through the control API: each made with its own id on a base, its content
// uploaded first, as the daemon's push does.
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { hashBuffer } from '../../engine/hash.js';
import type { VersionRecord } from '../../engine/types.js';
import type { Harness } from '../control-api-harness.js';

export interface SentVersion {
  versionId: string;
  path: string;
  baseVersionId: string | null;
  contentHash: string | null;
  timestamp: string;
}

/** `project()`: the project they go to (known once the harness is open). */
export function syncedVersions(h: () => Harness, project: () => string) {
  return {
    /** Uploads `text` (if any) and returns a version of `path` made on `base` at `timestamp` (null text: a deletion). */
    async made(path: string, base: string | null, text: string | null, timestamp: string): Promise<SentVersion> {
      const contentHash = text === null ? null : hashBuffer(Buffer.from(text));
      if (text !== null) {
        const upload = await h().request('PUT', `/v1/projects/${project()}/sync/objects/${contentHash}`, {
          payload: Buffer.from(text),
          headers: { 'content-type': 'application/octet-stream' },
        });
        expect(upload.statusCode).toBeLessThan(300);
      }
      return { versionId: randomUUID(), path, baseVersionId: base, contentHash, timestamp };
    },
    send: (workstation: string, versions: SentVersion[]) =>
      h().ok<{ results: Array<Record<string, unknown>> }>('POST', `/v1/projects/${project()}/sync/versions`, { body: { workstation, versions } }),
    read: async (path: string) => (await h().request('GET', `/v1/projects/${project()}/fs/read?path=${encodeURIComponent(path)}`)).body,
    history: async (path: string) =>
      (await h().ok<{ items: VersionRecord[] }>('GET', `/v1/projects/${project()}/history?path=${encodeURIComponent(path)}&limit=100`)).items,
  };
}
