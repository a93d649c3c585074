// Names with invisible format characters (issue 13, item 12): with U+202E (right-to-left override)
// `‮txt.exe` lists as `exe.txt`. Every place a name enters refuses them, as it refuses control
// characters, and changes nothing; ZWNJ/ZWJ, which some scripts and emoji need, stay allowed.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sanitizeLine } from '../cli/output.js';
import { normalizeProjectPath } from '../engine/paths.js';
import { type Harness, openHarness } from './control-api-harness.js';

// Bidi embeddings, overrides, isolates and marks; zero-width and invisible characters; BOM; a
// soft hyphen; interlinear annotation; a tag character (ASCII smuggling).
const FORMAT_CHARACTERS = ['\u202e', '\u202a', '\u2066', '\u2069', '\u200e', '\u200f', '\u061c', '\u200b', '\u2060', '\u2064', '\ufeff', '\u00ad', '\ufff9', '\u{e0041}'];

let h: Harness;
let projectId: string;

beforeAll(async () => {
  h = await openHarness();
  projectId = await h.createProject('names');
  await h.ok('PUT', `/v1/projects/${projectId}/fs/write?path=a.m`, { status: 201 });
});

afterAll(async () => {
  await h.dispose();
});

async function state(): Promise<string> {
  const history = await h.ok('GET', `/v1/projects/${projectId}/history?limit=100`);
  const projects = await h.ok('GET', '/v1/projects');
  const keys = await h.ok('GET', '/v1/keys');
  const rules = await h.ok('GET', `/v1/projects/${projectId}/fs/datasets`);
  return JSON.stringify([history, projects, keys, rules]);
}

describe('names with Unicode format characters', () => {
  it('are refused by the path normalizer, naming the code point and never echoing it', () => {
    for (const char of FORMAT_CHARACTERS) {
      const name = `${char}txt.exe`;
      expect(() => normalizeProjectPath(name), JSON.stringify(name)).toThrow(/invisible formatting character \(U\+[0-9A-F]{4,5}/);
      try {
        normalizeProjectPath(`docs/${name}`);
      } catch (error) {
        expect((error as Error).message).not.toContain(char);
      }
    }
  });

  it('are refused with a coded 422 by every route that takes a name, and nothing changes', async () => {
    const base = `/v1/projects/${projectId}`;
    const before = await state();
    for (const char of FORMAT_CHARACTERS) {
      const name = `${char}txt.exe`;
      const cases: Array<[string, () => ReturnType<Harness['request']>, string, string]> = [
        ['write', () => h.request('PUT', `${base}/fs/write?path=${encodeURIComponent(name)}`, { payload: 'x' }), 'INVALID_PATH', 'path'],
        ['write below a directory', () => h.request('PUT', `${base}/fs/write?path=${encodeURIComponent(`dir/${name}/f.m`)}`, { payload: 'x' }), 'INVALID_PATH', 'path'],
        ['rename to', () => h.request('POST', `${base}/fs/rename`, { body: { from: 'a.m', to: name } }), 'INVALID_PATH', 'to'],
        ['track a dataset pattern', () => h.request('POST', `${base}/fs/datasets/track`, { body: { pattern: `data/${name}` } }), 'INVALID_ARGUMENT', 'pattern'],
        ['project name', () => h.request('POST', '/v1/projects', { body: { name: `thesis ${char}` } }), 'INVALID_ARGUMENT', 'name'],
        ['key purpose', () => h.request('POST', '/v1/keys', { body: { purpose: `ci ${char}` } }), 'INVALID_ARGUMENT', 'purpose'],
      ];
      for (const [label, run, code, field] of cases) {
        const res = await run();
        expect(res.statusCode, `${label} ${JSON.stringify(char)}: ${res.body}`).toBe(422);
        expect(res.json().error.code).toBe(code);
        expect(res.json().error.details).toMatchObject({ field });
        expect(res.body).not.toContain(char);
      }
    }
    expect(await state()).toBe(before);
  });

  it('are shown as ? by the CLI when a server sends one (names stored before they were refused)', () => {
    expect(sanitizeLine('\u202etxt.exe')).toBe('?txt.exe');
    expect(sanitizeLine('a\u200bb\u0007c')).toBe('a?b?c');
    expect(sanitizeLine('\u{1f468}\u200d\u{1f469}')).toBe('\u{1f468}\u200d\u{1f469}');
  });

  it('still accept ZWNJ and ZWJ, which Persian, Indic scripts and emoji sequences need', async () => {
    const base = `/v1/projects/${projectId}`;
    for (const name of ['می\u200cخواهم.txt', 'क्\u200dष.md', '\u{1f468}\u200d\u{1f469}\u200d\u{1f467}.txt']) {
      await h.ok('PUT', `${base}/fs/write?path=${encodeURIComponent(name)}`, { status: 201 });
      const res = await h.request('GET', `${base}/fs/read?path=${encodeURIComponent(name)}`);
      expect(res.statusCode).toBe(200);
    }
  });
});
