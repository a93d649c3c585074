// Line diff of two texts (the history browser's side-by-side view, GET …/history/diff): Myers' O(ND)
// algorithm over line ids, after trimming the common prefix and suffix and dropping the lines the other
// side does not have (most edits touch a few lines of a long file, so D is small and the trim and the
// drop do most of the work). Past MAX_D differences the middle is reported as one replaced block
// instead: a diff of two unrelated 1 MB files must still answer quickly. 25,000 lines with one in 80
// changed: ~15 ms; from an alphabet of 10 lines, where D hits the bound: ~35 ms; unrelated: ~10 ms.

const MAX_D = 2000;

export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

export interface EditOp {
  kind: 'equal' | 'delete' | 'insert';
  /** [start, end) in the first text's lines */
  a: [number, number];
  /** [start, end) in the second text's lines */
  b: [number, number];
}

type Push = (kind: EditOp['kind'], a0: number, a1: number, b0: number, b1: number) => void;

/** The edit script turning `a` into `b`, line by line, adjacent operations of one kind merged. */
export function diffLines(a: readonly string[], b: readonly string[]): EditOp[] {
  const ids = new Map<string, number>();
  const x = lineIds(a, ids);
  const y = lineIds(b, ids);
  let start = 0;
  while (start < x.length && start < y.length && x[start] === y[start]) start++;
  let endX = x.length;
  let endY = y.length;
  while (endX > start && endY > start && x[endX - 1] === y[endY - 1]) {
    endX--;
    endY--;
  }
  const ops: EditOp[] = [];
  const push: Push = (kind, a0, a1, b0, b1) => {
    if (a1 - a0 === 0 && b1 - b0 === 0) return;
    const last = ops[ops.length - 1];
    if (last !== undefined && last.kind === kind && last.a[1] === a0 && last.b[1] === b0) {
      last.a[1] = a1;
      last.b[1] = b1;
    } else {
      ops.push({ kind, a: [a0, a1], b: [b0, b1] });
    }
  };
  push('equal', 0, start, 0, start);
  matchable(x, y, start, endX, start, endY, ids.size, push);
  push('equal', endX, x.length, endY, y.length);
  return ops;
}

/**
 * The middle without the lines that cannot match: a line that does not occur on the other side is in
 * no common subsequence, so dropping it before the search leaves the longest common subsequence (and
 * so the shortest edit script) unchanged, as GNU diff does. Scattered one-line edits (the usual
 * case) then cost the search nothing: their lines are all dropped and what remains is equal.
 */
function matchable(x: Int32Array, y: Int32Array, x0: number, x1: number, y0: number, y1: number, idCount: number, push: Push): void {
  const inX = new Uint8Array(idCount);
  const inY = new Uint8Array(idCount);
  for (let i = x0; i < x1; i++) inX[x[i]!] = 1;
  for (let j = y0; j < y1; j++) inY[y[j]!] = 1;
  const keptX = keep(x, x0, x1, inY);
  const keptY = keep(y, y0, y1, inX);
  if (keptX.length === x1 - x0 && keptY.length === y1 - y0) {
    middle(x, y, x0, x1, y0, y1, push);
    return;
  }
  const rx = pick(x, keptX);
  const ry = pick(y, keptY);
  // Lines between two matched pairs are deleted (left) and inserted (right), in that order.
  let nextX = x0;
  let nextY = y0;
  middle(rx, ry, 0, rx.length, 0, ry.length, (kind, a0, a1, b0) => {
    if (kind !== 'equal') return;
    for (let k = 0; k < a1 - a0; ) {
      const i = keptX[a0 + k]!;
      const j = keptY[b0 + k]!;
      let run = 1;
      while (k + run < a1 - a0 && keptX[a0 + k + run] === i + run && keptY[b0 + k + run] === j + run) run++;
      push('delete', nextX, i, nextY, nextY);
      push('insert', i, i, nextY, j);
      push('equal', i, i + run, j, j + run);
      nextX = i + run;
      nextY = j + run;
      k += run;
    }
  });
  push('delete', nextX, x1, nextY, nextY);
  push('insert', x1, x1, nextY, y1);
}

function pick(ids: Int32Array, indexes: Int32Array): Int32Array {
  const out = new Int32Array(indexes.length);
  for (let k = 0; k < indexes.length; k++) out[k] = ids[indexes[k]!]!;
  return out;
}

function keep(ids: Int32Array, from: number, to: number, other: Uint8Array): Int32Array {
  const kept = new Int32Array(to - from);
  let count = 0;
  for (let i = from; i < to; i++) if (other[ids[i]!] === 1) kept[count++] = i;
  return kept.subarray(0, count);
}

/** Each line as a number, equal lines the same number. A plain loop: `Int32Array.from` with a mapping
 * function took 4× as long (16–25 ms for two 25,000-line files). */
function lineIds(lines: readonly string[], ids: Map<string, number>): Int32Array {
  const out = new Int32Array(lines.length);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    let id = ids.get(line);
    if (id === undefined) {
      id = ids.size;
      ids.set(line, id);
    }
    out[i] = id;
  }
  return out;
}

/** Myers' greedy forward search with the trace kept for backtracking. */
function middle(x: Int32Array, y: Int32Array, x0: number, x1: number, y0: number, y1: number, push: Push): void {
  const n = x1 - x0;
  const m = y1 - y0;
  if (n === 0 || m === 0) {
    push('delete', x0, x1, y0, y0);
    push('insert', x1, x1, y0, y1);
    return;
  }
  const max = Math.min(n + m, MAX_D);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = -1;
  for (let d = 0; d <= max; d++) {
    // Only the diagonals step d can reach (the window -d..d): the trace stays O(D²), not O(D·(N+M)).
    trace.push(v.slice(offset - d, offset + d + 1));
    for (let k = -d; k <= d; k += 2) {
      let px: number;
      if (k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!)) px = v[offset + k + 1]!;
      else px = v[offset + k - 1]! + 1;
      let py = px - k;
      while (px < n && py < m && x[x0 + px] === y[y0 + py]) {
        px++;
        py++;
      }
      v[offset + k] = px;
      if (px >= n && py >= m) {
        found = d;
        break;
      }
    }
    if (found !== -1) break;
  }
  if (found === -1) {
    // Too different: one block replaced by the other.
    push('delete', x0, x1, y0, y0);
    push('insert', x1, x1, y0, y1);
    return;
  }
  // Backtrack from (n, m) to (0, 0): each step d is one edit then a diagonal run (a snake), kept as
  // [x, y, run, edit] (edit 0: none, 1: insert, 2: delete) and replayed forwards as ranges.
  const steps: number[] = [];
  let px = n;
  let py = m;
  for (let d = found; d > 0; d--) {
    const window = trace[d]!;
    const prev = (diagonal: number): number => window[diagonal + d]!;
    const k = px - py;
    const down = k === -d || (k !== d && prev(k - 1) < prev(k + 1));
    const prevK = down ? k + 1 : k - 1;
    const prevX = prev(prevK);
    const prevY = prevX - prevK;
    const midX = down ? prevX : prevX + 1;
    steps.push(prevX, prevY, px - midX, down ? 1 : 2);
    px = prevX;
    py = prevY;
  }
  push('equal', x0, x0 + px, y0, y0 + py);
  for (let s = steps.length - 4; s >= 0; s -= 4) {
    const [sx, sy, run, edit] = [steps[s]!, steps[s + 1]!, steps[s + 2]!, steps[s + 3]!];
    if (edit === 1) push('insert', x0 + sx, x0 + sx, y0 + sy, y0 + sy + 1);
    else push('delete', x0 + sx, x0 + sx + 1, y0 + sy, y0 + sy);
    const mx = edit === 1 ? sx : sx + 1;
    const my = edit === 1 ? sy + 1 : sy;
    push('equal', x0 + mx, x0 + mx + run, y0 + my, y0 + my + run);
  }
}

export type SideBySideRow =
  | { kind: 'equal' | 'change' | 'delete' | 'insert'; left: number | null; right: number | null }
  | { kind: 'skip'; count: number };

/**
 * Side-by-side rows with `context` unchanged lines around each change; longer unchanged runs become
 * one { kind: 'skip', count } row. `left` / `right` are line indexes (null: no line on that side).
 */
export function sideBySide(ops: readonly EditOp[], context = 3): SideBySideRow[] {
  const rows: SideBySideRow[] = [];
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    if (op.kind === 'equal') {
      const length = op.a[1] - op.a[0];
      const head = i === 0 ? 0 : Math.min(context, length);
      const tail = i === ops.length - 1 ? 0 : Math.min(context, length - head);
      for (let j = 0; j < head; j++) rows.push({ kind: 'equal', left: op.a[0] + j, right: op.b[0] + j });
      if (length - head - tail > 0) rows.push({ kind: 'skip', count: length - head - tail });
      for (let j = length - tail; j < length; j++) rows.push({ kind: 'equal', left: op.a[0] + j, right: op.b[0] + j });
      continue;
    }
    // A delete followed by an insert is a change: pair their lines side by side.
    const deleted = op.kind === 'delete' ? op : null;
    const next = ops[i + 1];
    const inserted = op.kind === 'insert' ? op : next !== undefined && next.kind === 'insert' ? next : null;
    if (deleted !== null && inserted === next) i++;
    const left = deleted === null ? 0 : deleted.a[1] - deleted.a[0];
    const right = inserted === null ? 0 : inserted.b[1] - inserted.b[0];
    for (let j = 0; j < Math.max(left, right); j++) {
      rows.push({
        kind: j < left && j < right ? 'change' : j < left ? 'delete' : 'insert',
        left: j < left ? deleted!.a[0] + j : null,
        right: j < right ? inserted!.b[0] + j : null,
      });
    }
  }
  return rows;
}
