// Two audiences: people read tables; scripts read exactly one JSON document on stdout (--json).
// Hints and progress go to stderr and are silenced under --json, so stdout stays machine-clean.

import { showPath } from '../engine/raw-names.js';
import { UNSAFE_CHARACTER } from '../engine/unsafe-text.js';
import { colorEnabled, painter } from './color.js';

export interface Output {
  readonly json: boolean;
  /** Prints `doc` as JSON with --json, else runs the human renderer. */
  result(doc: unknown, human: () => void): void;
  /** A line of human output on stdout (not under --json; callers use result()). */
  line(text: string): void;
  /** A hint for people on stderr, silenced under --json. */
  hint(text: string): void;
  /** A warning on stderr, always shown. */
  warn(text: string): void;
  table(headers: string[], rows: Array<Array<string | number>>, options?: { rightAlign?: number[] }): void;
}

export function createOutput(json: boolean): Output {
  const out = (text: string) => process.stdout.write(text + '\n');
  // Colour only for people: never under --json, only on a terminal, not with NO_COLOR (color.ts).
  const paintOut = painter(!json && colorEnabled(process.stdout));
  const paintErr = painter(!json && colorEnabled(process.stderr));
  return {
    json,
    result(doc, human) {
      if (json) out(JSON.stringify(doc, null, 2));
      else human();
    },
    line: out,
    hint(text) {
      if (!json) process.stderr.write(paintErr('cyan', text) + '\n');
    },
    warn(text) {
      process.stderr.write(`strata: ${paintErr('yellow', `warning: ${text}`)}\n`);
    },
    table(headers, rows, options = {}) {
      const text = renderTable(headers, rows, options.rightAlign ?? []);
      // The header is painted after the layout: escape codes would count as width.
      const end = text.indexOf('\n');
      out(end === -1 ? paintOut('bold', text) : paintOut('bold', text.slice(0, end)) + text.slice(end));
    },
  };
}

export function renderTable(headers: string[], rows: Array<Array<string | number>>, rightAlign: number[] = []): string {
  const cells = rows.map((row) => row.map((cell) => sanitize(String(cell))));
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...cells.map((row) => displayWidth(row[column] ?? ''))),
  );
  const render = (row: string[]) =>
    row
      .map((cell, column) => {
        const pad = ' '.repeat(Math.max(0, (widths[column] ?? 0) - displayWidth(cell)));
        if (column === row.length - 1 && !rightAlign.includes(column)) return cell; // no trailing spaces
        return rightAlign.includes(column) ? pad + cell : cell + pad;
      })
      .join('  ');
  return [render(headers), ...cells.map(render)].join('\n');
}

// Paths and messages come from other users; a control character in one must not drive the terminal,
// and a bidirectional override must not reorder what the user reads (names stored before such
// characters were refused still exist).
const UNSAFE = new RegExp(UNSAFE_CHARACTER.source, 'gu');
/** Safe for a terminal; a name's bytes that are not UTF-8 (recorded as U+EF80-U+EFFF) show as `\xHH`. */
function sanitize(text: string): string {
  return showPath(text.replace(UNSAFE, '?'));
}

function displayWidth(text: string): number {
  return [...text].length;
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${UNITS[unit]}`;
}

/** '2026-11-22T02:11:05.123Z' → '2026-11-22 02:11:05Z' (UTC, like the API; no local-time guessing). */
export function formatTime(iso: string | undefined | null): string {
  if (!iso) return '';
  return iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

export function sanitizeLine(text: string): string {
  return sanitize(text);
}
