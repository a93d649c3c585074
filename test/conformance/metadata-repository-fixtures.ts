import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import { ERROR_CATALOGUE, type ErrorCode, StrataError } from '../../engine/errors.js';
import type { MetadataRepository, VersionCommit } from '../../engine/ports/metadata-repository.js';
import type { Actor, ContentHash, VersionRecord } from '../../engine/types.js';

// Deterministic inputs for the conformance suite: fixed ids, a frozen clock (timestamps derived from
// a counter), and content hashes of known labels.

export type RepositoryGetter = () => MetadataRepository;

export const PROJECT = '01936f2a-0000-7000-8000-00000000a001';
export const OTHER_PROJECT = '01936f2a-0000-7000-8000-00000000a002';
export const ORG = '01936f2a-0000-7000-8000-00000000b001';
export const ACTOR: Actor = { id: '01936f2a-0000-7000-8000-00000000c001', kind: 'user', name: 'Ada Lovelace' };
export const SERVICE: Actor = { id: '01936f2a-0000-7000-8000-00000000c002', kind: 'service', name: 'ci' };

const BASE_MS = Date.UTC(2026, 10, 22, 10, 0, 0);

/** The frozen clock: second `n` after 2026-11-22T10:00:00.000Z. */
export function at(n: number): string {
  return new Date(BASE_MS + n * 1000).toISOString();
}

/** A UUIDv7-shaped id whose order follows `n`. */
export function uuidFor(n: number, tag = 0): string {
  return `01936f2a-${tag.toString(16).padStart(4, '0')}-7000-8000-${n.toString(16).padStart(12, '0')}`;
}

export function hashOf(label: string): ContentHash {
  return `blake3:${createHash('sha256').update(label).digest('hex')}`;
}

/** Builds version records with increasing ids and timestamps, like the engine on a frozen clock. */
export function recordMaker(projectId = PROJECT) {
  let counter = 0;
  const base = (path: string): Omit<VersionRecord, 'contentHash' | 'size' | 'kind'> => {
    counter += 1;
    return {
      versionId: uuidFor(counter, projectId === PROJECT ? 1 : 2),
      projectId,
      path,
      actor: ACTOR,
      timestamp: at(counter),
      restoredFrom: null,
      dataset: false,
      executable: false,
      symlink: false,
    };
  };
  return {
    write(path: string, content: string, extra: Partial<VersionRecord> = {}): VersionRecord {
      return { ...base(path), contentHash: hashOf(content), size: Buffer.byteLength(content), kind: 'write', ...extra };
    },
    remove(path: string, extra: Partial<VersionRecord> = {}): VersionRecord {
      return { ...base(path), contentHash: null, size: 0, kind: 'delete', ...extra };
    },
  };
}

/** Commits records without preconditions and checks that every one committed. */
export async function commitAll(repository: MetadataRepository, records: VersionRecord[]): Promise<VersionRecord[]> {
  const commits: VersionCommit[] = records.map((record) => ({ record }));
  const results = await repository.versions.commit(commits);
  expect(results.map((result) => result.ok)).toStrictEqual(records.map(() => true));
  return records;
}

/** Asserts that `promise` rejects with a StrataError of `code` (message from the catalogue). */
export async function expectStrataError(
  promise: Promise<unknown>,
  code: ErrorCode,
  details?: Record<string, unknown>,
): Promise<StrataError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error, `expected ${code}`).toBeInstanceOf(StrataError);
  const strata = error as StrataError;
  expect(strata.code).toBe(code);
  expect(strata.status).toBe(ERROR_CATALOGUE[code].status);
  if (details !== undefined) expect(strata.details).toMatchObject(details);
  return strata;
}

/** Cursors no listing may accept. */
export const BAD_CURSORS = [
  'not a cursor!',
  '%%%%',
  Buffer.from('hello').toString('base64url'),
  Buffer.from('[1,2]').toString('base64url'),
  Buffer.from('{"s":-1}').toString('base64url'),
  Buffer.from('null').toString('base64url'),
  'x'.repeat(100_000),
];

type Fetch<T> = (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string }>;

/** Every page, following nextCursor to the end. */
export async function pagesOf<T>(fetch: Fetch<T>): Promise<T[][]> {
  const pages: T[][] = [];
  let cursor: string | undefined;
  do {
    const page = await fetch(cursor);
    pages.push(page.items);
    cursor = page.nextCursor;
    if (pages.length > 1_000) throw new Error('pagination did not terminate');
  } while (cursor !== undefined);
  return pages;
}

/** Every item, checking that each page but the last is full and the last is not empty. */
export async function collectAll<T>(fetch: Fetch<T>, limit: number): Promise<T[]> {
  const pages = await pagesOf(fetch);
  for (const page of pages.slice(0, -1)) expect(page).toHaveLength(limit);
  if (pages.length > 1) expect(pages.at(-1)!.length).toBeGreaterThan(0);
  return pages.flat();
}
