// Line diff of two texts (the history browser's side-by-side view, GET …/history/diff): Myers' O(ND)
// algorithm over line ids, after trimming the common prefix and suffix (most edits touch a few lines
// of a long file, so D is small and the trim does most of the work). Past MAX_D differences the middle
// is reported as one replaced block instead: a diff of two unrelated 1 MB files must still answer
// quickly (25,000 lines: ~50 ms either way on the reference machine).

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
  const idOf = (line: string): number => {
    let id = ids.get(line);
    if (id === undefined) {
      id = ids.size;
      ids.set(line, id);
    }
    return id;
  };
  const x = Int32Array.from(a, idOf);
  const y = Int32Array.from(b, idOf);
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
  middle(x, y, start, endX, start, endY, push);
  push('equal', endX, x.length, endY, y.length);
  return ops;
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
  // Backtrack from (n, m) to (0, 0), collecting moves in reverse.
  const moves: Array<[EditOp['kind'], number, number]> = [];
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
    while (px > prevX && py > prevY) {
      moves.push(['equal', px - 1, py - 1]);
      px--;
      py--;
    }
    if (down) moves.push(['insert', px, py - 1]);
    else moves.push(['delete', px - 1, py]);
    px = prevX;
    py = prevY;
  }
  while (px > 0 && py > 0) {
    moves.push(['equal', px - 1, py - 1]);
    px--;
    py--;
  }
  for (let i = moves.length - 1; i >= 0; i--) {
    const [kind, mx, my] = moves[i]!;
    if (kind === 'equal') push('equal', x0 + mx, x0 + mx + 1, y0 + my, y0 + my + 1);
    else if (kind === 'delete') push('delete', x0 + mx, x0 + mx + 1, y0 + my, y0 + my);
    else push('insert', x0 + mx, x0 + mx, y0 + my, y0 + my + 1);
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
