// The in-process variant of bench/ingest-large.ts, run in a process of its own so that its peak RSS
// is Strata's (an engine that ingests), not the benchmark harness's (which holds the other variants'
// leftovers: its RSS before an ingest ranged 87–181 MB).
//
//   node dist/bench/ingest-large-child.js HOME (default|plain) FILE...
// Prints one JSON line: {seconds, peakRss, baselineRss, sizes}. `plain` raises the project's dataset
// threshold above every file, so each is one object instead of a dataset.
import { statSync } from 'node:fs';
import { peakRss, resetPeakRss } from './lib/proc.js';
import { BENCH_ACTOR, openBenchEngine } from './lib/strata.js';

const [home, mode, ...files] = process.argv.slice(2);
if (home === undefined || (mode !== 'default' && mode !== 'plain') || files.length === 0) {
  console.error('usage: ingest-large-child.js HOME (default|plain) FILE...');
  process.exit(2);
}
const { local, projectId } = await openBenchEngine(home);
if (mode === 'plain') {
  const largest = Math.max(...files.map((f) => statSync(f).size));
  await local.engine.setDatasetThreshold({ projectId, thresholdBytes: 2 * largest });
}
// VmHWM is reset so it reports the ingest, not the start-up.
const reset = resetPeakRss();
const baselineRss = process.memoryUsage.rss();
const start = process.hrtime.bigint();
const written = await Promise.all(files.map((file, i) => local.engine.writeFile({ projectId, path: `data/file-${i}.bin`, actor: BENCH_ACTOR, content: { file } })));
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const peak = reset ? peakRss() : null;
await local.close();
console.log(JSON.stringify({ seconds, peakRss: peak, baselineRss, sizes: written.map((w) => w.version.size), dataset: written.map((w) => w.version.dataset) }));
