// Two versions of a file compared line by line (the history browser's side-by-side view): the rows
// to show, with a few unchanged lines around each change, computed here so the page receives the
// changed parts instead of both files (two 1 MB versions, one line in 80 changed: 0.4 MB of rows instead of 2 MB of text).
// Bounded: each side at most MAX_DIFF_BYTES (the diff runs on the event loop; two 1 MB versions of
// 25,000 lines take ~20 ms); a larger version, or a dataset, is DIFF_TOO_LARGE: download it instead.

import type { EngineContext } from '../context.js';
import { type SideBySideRow, diffLines, sideBySide, splitLines } from '../diff/line-diff.js';
import { StrataError } from '../errors.js';
import type { VersionRecord } from '../types.js';
import { readFile } from './read-file.js';

export const MAX_DIFF_BYTES = 8 * 1024 * 1024;
/** A NUL byte in this many first bytes makes content binary (as git decides). */
const BINARY_PROBE = 8000;

export type DiffLine = { n: number; text: string } | null;
export type VersionDiffRow = { kind: 'equal' | 'change' | 'delete' | 'insert'; left: DiffLine; right: DiffLine } | { kind: 'skip'; count: number };

export interface VersionDiff {
  a: VersionRecord;
  b: VersionRecord;
  /** either side is not text: no rows */
  binary: boolean;
  /** rows that are not unchanged context */
  changedLines: number;
  rows: VersionDiffRow[];
}

export async function diffVersions(ctx: EngineContext, input: { projectId: string; a: string; b: string; context?: number }): Promise<VersionDiff> {
  const context = input.context ?? 3;
  if (!Number.isSafeInteger(context) || context < 0 || context > 100) {
    throw new StrataError('INVALID_ARGUMENT', { message: 'context must be 0 to 100 lines', details: { field: 'context' } });
  }
  const [a, b] = await Promise.all([contentOf(ctx, input.projectId, input.a), contentOf(ctx, input.projectId, input.b)]);
  if (isBinary(a.bytes) || isBinary(b.bytes)) return { a: a.version, b: b.version, binary: true, changedLines: 0, rows: [] };
  const decoder = new TextDecoder();
  const left = splitLines(decoder.decode(a.bytes));
  const right = splitLines(decoder.decode(b.bytes));
  const line = (lines: string[], index: number | null): DiffLine => (index === null ? null : { n: index + 1, text: lines[index]! });
  const rows = sideBySide(diffLines(left, right), context).map((row: SideBySideRow): VersionDiffRow =>
    row.kind === 'skip' ? row : { kind: row.kind, left: line(left, row.left), right: line(right, row.right) },
  );
  return { a: a.version, b: b.version, binary: false, changedLines: rows.filter((row) => row.kind !== 'equal' && row.kind !== 'skip').length, rows };
}

async function contentOf(ctx: EngineContext, projectId: string, versionId: string): Promise<{ version: VersionRecord; bytes: Buffer }> {
  const { stream, size, version } = await readFile(ctx, { projectId, versionId });
  const record = version as VersionRecord;
  if (size > MAX_DIFF_BYTES || record.dataset) {
    stream.destroy();
    throw new StrataError('DIFF_TOO_LARGE', { details: { versionId: record.versionId, size, maxBytes: MAX_DIFF_BYTES } });
  }
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return { version: record, bytes: Buffer.concat(chunks) };
}

function isBinary(data: Buffer): boolean {
  return data.subarray(0, BINARY_PROBE).includes(0);
}
