// A one-line progress bar on stderr for long transfers. Only drawn on a terminal: in a pipe or a CI
// log, carriage-return redraws would become thousands of lines.

import { formatBytes } from './output.js';

export interface Progress {
  add(bytes: number): void;
  done(): void;
}

const NO_PROGRESS: Progress = { add() {}, done() {} };
const REDRAW_MS = 100;

export function createProgress(label: string, total: number | undefined, enabled: boolean): Progress {
  if (!enabled || !process.stderr.isTTY) return NO_PROGRESS;
  let bytes = 0;
  let lastDraw = 0;
  const started = performance.now();
  const draw = () => {
    const elapsed = (performance.now() - started) / 1000;
    const rate = elapsed > 0 ? `${formatBytes(bytes / elapsed)}/s` : '';
    const columns = process.stderr.columns || 80;
    let text: string;
    if (total && total > 0) {
      const fraction = Math.min(1, bytes / total);
      const width = Math.max(10, Math.min(40, columns - 60));
      const filled = Math.round(fraction * width);
      text = `${label} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${(fraction * 100).toFixed(0).padStart(3)}% ${formatBytes(bytes)}/${formatBytes(total)} ${rate}`;
    } else {
      text = `${label} ${formatBytes(bytes)} ${rate}`;
    }
    process.stderr.write(`\r${text.slice(0, columns - 1)}\u001b[K`);
  };
  return {
    add(n) {
      bytes += n;
      const now = performance.now();
      if (now - lastDraw >= REDRAW_MS) {
        lastDraw = now;
        draw();
      }
    },
    done() {
      draw();
      process.stderr.write('\n');
    },
  };
}
