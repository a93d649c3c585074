import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, RETIRED_CODES, StrataError } from '../engine/errors.js';
import { createIdGenerator, isUuid } from '../engine/ids.js';
import { extensionOf, normalizeDirectoryPath, normalizeProjectPath } from '../engine/paths.js';
import { DEFAULT_POLICY, isVersioned, mergePolicy } from '../engine/policy.js';
import { frozenClock } from './helpers/clock.js';

describe('error catalogue', () => {
  it('maps every code to an HTTP status and a message, and never reuses a retired code', () => {
    const codes = Object.keys(ERROR_CATALOGUE);
    expect(new Set(codes).size).toBe(codes.length);
    for (const [code, entry] of Object.entries(ERROR_CATALOGUE)) {
      expect(code).toMatch(/^[A-Z][A-Z0-9_]+$/);
      expect(entry.status).toBeGreaterThanOrEqual(400);
      expect(entry.status).toBeLessThan(600);
      expect(entry.message.length).toBeGreaterThan(0);
      expect(RETIRED_CODES).not.toContain(code);
    }
  });

  it('carries code, status, details and cause', () => {
    const cause = new Error('disk');
    const error = new StrataError('TAG_TAKEN', { details: { tag: 'v1' }, cause });
    expect(error).toMatchObject({ code: 'TAG_TAKEN', status: 409, details: { tag: 'v1' }, message: 'The tag is already used in this project' });
    expect(error.cause).toBe(cause);
  });
});

describe('project paths', () => {
  it('normalizes good paths', () => {
    expect(normalizeProjectPath('a/b.m')).toBe('a/b.m');
    expect(normalizeProjectPath('caf\u0065\u0301.txt')).toBe('caf\u00e9.txt'); // NFC
    expect(normalizeProjectPath('x %_*.py')).toBe('x %_*.py');
    expect(normalizeDirectoryPath('')).toBe('');
    expect(normalizeDirectoryPath('/')).toBe('');
    expect(normalizeDirectoryPath('data/')).toBe('data');
  });

  it('rejects every kind of traversal and garbage with INVALID_PATH naming the field', () => {
    const bad: unknown[] = ['', '/etc/passwd', '..', '../x', 'a/..', 'a/../../b', './a', 'a//b', 'a/', 'a\u0000', 'a\u001fb', 'a\u007f', 'a\u2028', 'a\\..\\b', '\udc00x', 'n'.repeat(256), 42, null, undefined, ['a']];
    for (const input of bad) {
      try {
        normalizeProjectPath(input, 'to');
        expect.unreachable(`accepted ${JSON.stringify(input)}`);
      } catch (error) {
        expect(error).toBeInstanceOf(StrataError);
        expect((error as StrataError).code).toBe('INVALID_PATH');
        expect((error as StrataError).details).toMatchObject({ field: 'to' });
      }
    }
  });

  it('finds extensions case-insensitively', () => {
    expect(extensionOf('A/Model.M')).toBe('.m');
    expect(extensionOf('.bashrc')).toBe('');
    expect(extensionOf('dir.d/file')).toBe('');
  });
});

describe('ids', () => {
  it('makes strictly increasing UUIDv7s, even within one millisecond', () => {
    const ids = createIdGenerator(frozenClock());
    const made = Array.from({ length: 5000 }, () => ids.uuid());
    for (const id of made) expect(isUuid(id)).toBe(true);
    expect(made[0]!.slice(0, 13)).toBe('01a2027b-d680'); // 2026-11-22T09:00:00Z in ms, big-endian hex
    for (let i = 1; i < made.length; i++) expect(made[i]! > made[i - 1]!).toBe(true);
    // the random bits (drawn from a pool, refilled on the way) are never handed out twice
    expect(new Set(made.map((id) => id.slice(19))).size).toBe(made.length);
  });
});

describe('versioning policy', () => {
  it('follows DESIGN.md §2', () => {
    const mb = 1024 * 1024;
    expect(isVersioned(DEFAULT_POLICY, 'a.m', 500 * mb)).toBe(true);
    expect(isVersioned(DEFAULT_POLICY, 'a.bin', 10 * mb)).toBe(true);
    expect(isVersioned(DEFAULT_POLICY, 'a.bin', 60 * mb)).toBe(false);
    const policy = mergePolicy(DEFAULT_POLICY, { largeFileAllowlist: ['h5', '.MAT'] });
    expect(policy.largeFileAllowlist).toEqual(['.h5', '.mat']);
    expect(isVersioned(policy, 'x.mat', 60 * mb)).toBe(true);
    expect(() => mergePolicy(DEFAULT_POLICY, { sizeThreshold: -1 })).toThrow(StrataError);
    expect(() => mergePolicy(DEFAULT_POLICY, { largeFileAllowlist: ['../x'] })).toThrow(StrataError);
  });
});
