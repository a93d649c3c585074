// Shell completion latency (issue 18: "Shell completion answers in ≤ 100 ms").
//   - bash: the script from `strata completion bash` sourced once in one bash; then each of a few
//     command lines completed 200 times, each call timed inside bash with $EPOCHREALTIME (what
//     readline waits for, without drawing the menu)
//   - fish (when installed): the same with `complete -C`, timed with `date` around each call; the
//     cost of the two `date` runs is measured apart and included (a conservative figure)
//   - for comparison, one start of the CLI (`strata --version`): what every TAB would cost if the
//     completion asked node, as dynamic completions do
//
//   node dist/bench/completion.js [--runs 200]
// Result: bench/results/completion.json.

import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI_MAIN, freshDir, machineInfo, removeDir, writeResult } from './lib/env.js';
import { percentile } from './lib/stats.js';
import { printTable } from './lib/table.js';

const TARGET_MS = 100;
const LINES = ['strata sna', 'strata snapshot ', 'strata snapshot restore --', 'strata --json snapshot create -', 'strata daemon --log-format '];

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): string {
  const result = spawnSync(command, args, { encoding: 'utf8', env, maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`${command} failed (${result.status ?? result.signal}): ${result.stderr}`);
  return result.stdout;
}

const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;

/** "line|microseconds" rows → milliseconds per line. */
function parseSamples(out: string): Map<string, number[]> {
  const samples = new Map<string, number[]>();
  for (const row of out.split('\n')) {
    const at = row.lastIndexOf('|');
    if (at === -1) continue;
    const line = row.slice(0, at);
    samples.set(line, [...(samples.get(line) ?? []), Number(row.slice(at + 1)) / 1000]);
  }
  return samples;
}

// The words of each line as readline splits them; a trailing space means an empty word to complete.
// (Each `${` of the shell text is written `\${`, for the template, and unescaped at the end.)
const BASH_LOOP = String.raw`
source "$1"; shift; runs="$1"; shift
for line in "$@"; do
  read -ra words <<< "$line"
  if [ "\${line% }" != "$line" ]; then words+=(''); fi
  for ((n = 0; n < runs; n++)); do
    COMP_WORDS=("\${words[@]}"); COMP_CWORD=$((\${#words[@]} - 1)); COMPREPLY=()
    t0=\${EPOCHREALTIME/./}; _strata; t1=\${EPOCHREALTIME/./}
    [ "\${#COMPREPLY[@]}" -gt 0 ] || { echo "no completion for '$line'" >&2; exit 1; }
    echo "$line|$((t1 - t0))"
  done
done
`.replace(/\\\$/g, '$');

// __strata_line is the script's per-line cache: erased, so that every call walks the line afresh.
const FISH_LOOP = `
source $argv[1]; set runs $argv[2]
for n in (seq $runs)
    set t0 (date +%s%6N); set t1 (date +%s%6N)
    echo "date|"(math $t1 - $t0)
end
for line in $argv[3..-1]
    for n in (seq $runs)
        set -e __strata_line
        set t0 (date +%s%6N)
        set found (complete -C "$line")
        set t1 (date +%s%6N)
        test (count $found) -gt 0; or begin; echo "no completion for '$line'" >&2; exit 1; end
        echo "$line|"(math $t1 - $t0)
    end
end
`;

function stats(samples: number[]): { p50: number; p99: number; max: number; n: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 1000) / 1000;
  return { p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), max: round(sorted.at(-1)!), n: sorted.length };
}

function main(): void {
  const runs = arg('runs', 200);
  const dir = freshDir('completion');
  const script = (shell: string) => {
    const file = join(dir, `strata.${shell}`);
    writeFileSync(file, run(process.execPath, [CLI_MAIN, 'completion', shell]));
    return file;
  };
  const shells: Record<string, { perLine: Record<string, ReturnType<typeof stats>>; all: ReturnType<typeof stats>; measurementOverheadMs?: number }> = {};
  const rows: Array<Array<string | number>> = [];
  const record = (shell: string, samples: Map<string, number[]>, overhead?: number) => {
    const perLine = Object.fromEntries(LINES.map((line) => [line, stats(samples.get(line) ?? [])]));
    const all = stats(LINES.flatMap((line) => samples.get(line) ?? []));
    shells[shell] = { perLine, all, ...(overhead === undefined ? {} : { measurementOverheadMs: overhead }) };
    for (const line of LINES) rows.push([shell, JSON.stringify(line), perLine[line]!.p50, perLine[line]!.p99, perLine[line]!.max]);
    rows.push([shell, 'all lines', all.p50, all.p99, all.max]);
  };

  // LC_ALL=C: $EPOCHREALTIME's decimal separator follows the locale.
  record('bash', parseSamples(run('bash', ['--norc', '--noprofile', '-c', BASH_LOOP, 'bash', script('bash'), String(runs), ...LINES], { ...process.env, LC_ALL: 'C' })));
  if (has('fish')) {
    const samples = parseSamples(run('fish', ['--no-config', '-c', FISH_LOOP, script('fish'), String(runs), ...LINES]));
    record('fish', samples, stats(samples.get('date') ?? [0]).p50);
  } else {
    console.log('fish is not installed: bash only');
  }
  // A dynamic completion starts the CLI on every TAB: its start alone, for comparison.
  const starts: number[] = [];
  for (let i = 0; i < 10; i++) {
    const t0 = process.hrtime.bigint();
    run(process.execPath, [CLI_MAIN, '--version']);
    starts.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const cliStart = stats(starts);
  rows.push(['(node) strata --version', 'one start', cliStart.p50, cliStart.p99, cliStart.max]);

  printTable(`completion latency, ms (${runs} completions per line; target ≤ ${TARGET_MS} ms)`, ['shell', 'command line', 'p50', 'p99', 'max'], rows);
  const met = Object.values(shells).every((shell) => shell.all.p99 <= TARGET_MS);
  console.log(`\ntarget ≤ ${TARGET_MS} ms at p99: ${met ? 'met' : 'NOT met'}`);
  const file = writeResult('completion', { machine: machineInfo(), runs, targetMs: TARGET_MS, met, shells, cliStartMs: cliStart });
  console.log(`result: ${file}`);
  removeDir(dir);
}

main();
