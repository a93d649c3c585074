// Plain-text tables for the terminal.
import type { Summary, TargetCheck } from './stats.js';

export function printTable(title: string, headers: string[], rows: Array<Array<string | number>>): void {
  const cells = rows.map((row) => row.map((cell) => (typeof cell === 'number' ? formatNumber(cell) : cell)));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((row) => (row[i] ?? '').length)));
  const line = (row: string[]) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  console.log(`\n${title}`);
  console.log(line(headers));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of cells) console.log(line(row));
}

export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (Number.isInteger(value) && abs < 1000) return String(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toFixed(3);
}

/** "median (min–max)" */
export function spread(summary: Summary, digits?: (value: number) => string): string {
  const f = digits ?? formatNumber;
  return summary.n === 1 ? f(summary.median) : `${f(summary.median)} (${f(summary.min)}–${f(summary.max)})`;
}

export function printTargets(checks: TargetCheck[]): void {
  printTable(
    'Targets',
    ['target', 'required', 'measured', 'met'],
    checks.map((c) => [c.name, c.target, formatNumber(c.value), c.met ? 'yes' : 'NO']),
  );
}
