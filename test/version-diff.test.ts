// Two versions compared line by line (engine/diff/line-diff.ts, engine/commands/diff-versions.ts,
// GET …/history/diff): the edit script is always a correct one and a short one, context is cut as
// asked, binary and oversized content is said so, and the route answers through HTTP.
import { describe, expect, it } from 'vitest';
import { diffLines, sideBySide } from '../engine/diff/line-diff.js';
import { openHarness } from './control-api-harness.js';

/** The two texts the script describes, rebuilt from it; checks that 'equal' runs really are equal. */
function replay(a: string[], b: string[], ops: ReturnType<typeof diffLines>): { a: string[]; b: string[]; edits: number } {
  const outA: string[] = [];
  const outB: string[] = [];
  let edits = 0;
  for (const op of ops) {
    outA.push(...a.slice(op.a[0], op.a[1]));
    outB.push(...b.slice(op.b[0], op.b[1]));
    if (op.kind === 'equal') expect(a.slice(op.a[0], op.a[1])).toEqual(b.slice(op.b[0], op.b[1]));
    else edits += op.a[1] - op.a[0] + (op.b[1] - op.b[0]);
  }
  return { a: outA, b: outB, edits };
}

/** Length of the longest common subsequence, by dynamic programming (the definition, for small inputs). */
function lcsLength(a: string[], b: string[]): number {
  let row = new Array<number>(b.length + 1).fill(0);
  for (const line of a) {
    const next = [0];
    for (let j = 1; j <= b.length; j++) next.push(line === b[j - 1] ? row[j - 1]! + 1 : Math.max(row[j]!, next[j - 1]!));
    row = next;
  }
  return row[b.length]!;
}

describe('line diff', () => {
  it('describes both texts exactly, with no more edits than the random changes made, on 500 trials', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let trial = 0; trial < 500; trial++) {
      const a = Array.from({ length: Math.floor(random() * 40) }, () => `line ${Math.floor(random() * 6)}`);
      const b = [...a];
      const changes = Math.floor(random() * 8);
      for (let i = 0; i < changes; i++) {
        const at = Math.floor(random() * (b.length + 1));
        if (random() < 0.5) b.splice(at, 0, `new ${Math.floor(random() * 6)}`);
        else b.splice(at, 1);
      }
      const ops = diffLines(a, b);
      const replayed = replay(a, b, ops);
      expect(replayed.a).toEqual(a);
      expect(replayed.b).toEqual(b);
      // Myers finds a shortest script: never more edits than the random changes made (each made ≤ 1).
      expect(replayed.edits).toBeLessThanOrEqual(changes);
      // and exactly the shortest: what is not in a longest common subsequence, nothing more (the lines
      // dropped before the search because the other side lacks them must not cost any).
      expect(replayed.edits).toBe(a.length + b.length - 2 * lcsLength(a, b));
    }
  });

  it('keeps `context` unchanged lines around a change and folds the rest', () => {
    const a = Array.from({ length: 100 }, (_, i) => `line ${i}`);
    const b = [...a];
    b[50] = 'changed';
    const rows = sideBySide(diffLines(a, b), 2);
    expect(rows).toEqual([
      { kind: 'skip', count: 48 },
      { kind: 'equal', left: 48, right: 48 },
      { kind: 'equal', left: 49, right: 49 },
      { kind: 'change', left: 50, right: 50 },
      { kind: 'equal', left: 51, right: 51 },
      { kind: 'equal', left: 52, right: 52 },
      { kind: 'skip', count: 47 },
    ]);
  });

  it('answers two unrelated 25,000-line texts quickly (one replaced block past the difference budget)', () => {
    const a = Array.from({ length: 25_000 }, (_, i) => `a ${i}`);
    const b = Array.from({ length: 25_000 }, (_, i) => `b ${i}`);
    const started = performance.now();
    const ops = diffLines(a, b);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(replay(a, b, ops).b).toEqual(b);
  });
});

describe('GET /v1/projects/:id/history/diff', () => {
  it('compares two versions over HTTP; binary and oversized content are said so', async () => {
    const h = await openHarness();
    try {
      const projectId = await h.createProject('diff');
      const write = async (path: string, content: string | Buffer) =>
        (await h.request('PUT', `/v1/projects/${projectId}/fs/write?path=${path}`, { payload: content, headers: { 'content-type': 'application/octet-stream' } })).json().version.versionId as string;
      const v1 = await write('fit.m', 'function y = fit(x)\n  y = x * 2;\nend\n');
      const v2 = await write('fit.m', 'function y = fit(x)\n  y = x * 3;\n  disp(y);\nend\n');
      const diff = await h.ok<{ binary: boolean; changedLines: number; rows: unknown[]; a: { versionId: string } }>('GET', `/v1/projects/${projectId}/history/diff?a=${v1}&b=${v2}`);
      expect(diff.a.versionId).toBe(v1);
      expect(diff).toMatchObject({ binary: false, changedLines: 2 });
      expect(diff.rows).toEqual([
        { kind: 'equal', left: { n: 1, text: 'function y = fit(x)' }, right: { n: 1, text: 'function y = fit(x)' } },
        { kind: 'change', left: { n: 2, text: '  y = x * 2;' }, right: { n: 2, text: '  y = x * 3;' } },
        { kind: 'insert', left: null, right: { n: 3, text: '  disp(y);' } },
        { kind: 'equal', left: { n: 3, text: 'end' }, right: { n: 4, text: 'end' } },
      ]);
      const bin1 = await write('data.bin', Buffer.from([1, 0, 2]));
      const bin2 = await write('data.bin', Buffer.from([1, 0, 3]));
      expect(await h.ok('GET', `/v1/projects/${projectId}/history/diff?a=${bin1}&b=${bin2}`)).toMatchObject({ binary: true, rows: [] });
      const big = await write('big.txt', Buffer.alloc(8 * 1024 * 1024 + 1, 'x'));
      const tooLarge = await h.request('GET', `/v1/projects/${projectId}/history/diff?a=${v1}&b=${big}`);
      expect(tooLarge.statusCode).toBe(422);
      expect(tooLarge.json().error.code).toBe('DIFF_TOO_LARGE');
      const unknown = await h.request('GET', `/v1/projects/${projectId}/history/diff?a=${v1}&b=01936f2a-0000-7000-8000-00000000dead`);
      expect(unknown.statusCode).toBe(404);
    } finally {
      await h.dispose();
    }
  });
});
