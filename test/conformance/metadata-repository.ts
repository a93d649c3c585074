import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MetadataRepository } from '../../engine/ports/metadata-repository.js';
import { accessConformance, projectConformance } from './metadata-repository-access.js';
import { diffConformance } from './metadata-repository-diff.js';
import { entriesAtConformance } from './metadata-repository-entries-at.js';
import { execBitConformance } from './metadata-repository-exec.js';
import {
  BAD_CURSORS,
  commitAll,
  expectStrataError,
  ORG,
  PROJECT,
  type RepositoryGetter,
  recordMaker,
} from './metadata-repository-fixtures.js';
import { pruneConformance } from './metadata-repository-prune.js';
import { renameConformance } from './metadata-repository-renames.js';
import { shortIdConformance } from './metadata-repository-short-ids.js';
import { snapshotConformance, snapshotInput } from './metadata-repository-snapshots.js';
import { symlinkConformance } from './metadata-repository-symlink.js';
import { versionCommitConformance, versionReadConformance } from './metadata-repository-versions.js';

export interface OpenedRepository {
  repository: MetadataRepository;
  /** closes the repository and deletes everything it stored */
  cleanup: () => Promise<void>;
}

/**
 * The behaviour every MetadataRepository must have, whatever the database underneath. `open` must
 * return an empty repository each time; it is called before every test.
 */
export function metadataRepositoryConformance(name: string, open: () => Promise<OpenedRepository>): void {
  describe(`MetadataRepository conformance: ${name}`, () => {
    let opened: OpenedRepository | undefined;
    beforeEach(async () => {
      opened = await open();
    });
    afterEach(async () => {
      await opened?.cleanup();
      opened = undefined;
    });
    const repo: RepositoryGetter = () => {
      if (opened === undefined) throw new Error('repository not open');
      return opened.repository;
    };

    versionCommitConformance(repo);
    versionReadConformance(repo);
    pruneConformance(repo);
    snapshotConformance(repo);
    diffConformance(repo);
    execBitConformance(repo);
    symlinkConformance(repo);
    shortIdConformance(repo);
    renameConformance(repo);
    entriesAtConformance(repo);
    projectConformance(repo);
    accessConformance(repo);
    cursorConformance(repo);
  });
}

function cursorConformance(repo: RepositoryGetter): void {
  describe('cursors', () => {
    it('rejects malformed cursors with INVALID_CURSOR in every listing', async () => {
      const make = recordMaker();
      await commitAll(repo(), [make.write('a/1', '1'), make.write('a/2', '2'), make.write('a/3', '3')]);
      const snapshot = await repo().snapshots.create(snapshotInput(1));
      const listings: Array<[string, (cursor: string) => Promise<unknown>]> = [
        ['history', (cursor) => repo().versions.history(PROJECT, { cursor, limit: 1 })],
        ['path history', (cursor) => repo().versions.history(PROJECT, { path: 'a/1', cursor, limit: 1 })],
        ['entries', (cursor) => repo().versions.listEntries(PROJECT, { prefix: '', cursor, limit: 1 })],
        ['snapshots', (cursor) => repo().snapshots.list(PROJECT, { cursor, limit: 1 })],
        ['snapshot entries', (cursor) => repo().snapshots.entries(snapshot.snapshotId, { cursor, limit: 1 })],
        ['audit', (cursor) => repo().access.listAudit(ORG, { cursor, limit: 1 })],
      ];
      for (const [label, list] of listings) {
        for (const cursor of BAD_CURSORS) {
          const error = await expectStrataError(list(cursor), 'INVALID_CURSOR');
          expect(error.message, label).toBe('The pagination cursor is invalid');
        }
      }
    });

    it('rejects a cursor from another listing', async () => {
      const make = recordMaker();
      await commitAll(repo(), [make.write('a/1', '1'), make.write('a/2', '2'), make.write('b', '3')]);
      const historyCursor = (await repo().versions.history(PROJECT, { limit: 1 })).nextCursor!;
      const entriesCursor = (await repo().versions.listEntries(PROJECT, { prefix: 'a/', limit: 1 })).nextCursor!;
      expect(historyCursor).toBeTypeOf('string');
      expect(entriesCursor).toBeTypeOf('string');
      await expectStrataError(repo().versions.listEntries(PROJECT, { prefix: '', cursor: historyCursor, limit: 1 }), 'INVALID_CURSOR');
      await expectStrataError(repo().versions.history(PROJECT, { cursor: entriesCursor, limit: 1 }), 'INVALID_CURSOR');
      // an entries cursor is only good for its prefix
      await expectStrataError(repo().versions.listEntries(PROJECT, { prefix: 'b', cursor: entriesCursor, limit: 1 }), 'INVALID_CURSOR');
    });
  });
}
