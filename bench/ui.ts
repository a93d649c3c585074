// The history browser's figures (issue 18), in Debian's chromium driven by playwright-core against
// `strata serve` on loopback:
//   1. the first page of a file's history when the path has BENCH_UI_VERSIONS (10,000) versions:
//      from the start of a fresh page load of its address to the timeline's rows being in the page
//      (target ≤ 200 ms to interactive);
//   2. the side-by-side diff of two 1 MB text versions (25,000 lines, 1 in 80 changed): from the start
//      of the page load to the diff table in the page (target ≤ 300 ms).
// Each also inside the running page (modules loaded: what a click in the file tree costs).
// Each is measured BENCH_ROUNDS (10) times on a new page in a new browser context (nothing cached);
// the figure is the median. The timings come from the page itself (performance.now(), counted from
// navigation start, when the element is in the page and its frame painted), so they include loading
// the page's assets, the API calls and rendering, and nothing of the driver.
// Usage: node dist/bench/run.js ui   (STRATA_CHROMIUM overrides /usr/bin/chromium)
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { bootstrapHome } from '../server/bootstrap.js';
import { freshDir, machineInfo, removeDir, writeResult } from './lib/env.js';
import { HttpClient, writePath } from './lib/http.js';
import { round3, summarize, target } from './lib/stats.js';
import { startServerChild } from './lib/strata.js';
import { printTargets } from './lib/table.js';

const VERSIONS = Number(process.env['BENCH_UI_VERSIONS'] ?? 10_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 10);
const CHROMIUM = process.env['STRATA_CHROMIUM'] ?? '/usr/bin/chromium';
const WRITERS = 8;

function textVersion(changedEvery: number, marker: string): Buffer {
  const lines: string[] = [];
  for (let i = 0; i < 25_000; i++) lines.push(i % changedEvery === 0 && marker !== '' ? `    result(${i}) = ${marker} * x(${i}); % changed` : `    result(${i}) = model(x(${i}), params); % line ${i}`);
  return Buffer.from(`${lines.join('\n')}\n`);
}

async function main(): Promise<void> {
  const dir = freshDir('ui');
  const home = join(dir, 'home');
  const { apiKey } = await bootstrapHome({ home, env: process.env });
  const server = await startServerChild(home, { env: { STRATA_RATE_LIMIT: 'off' } });
  const client = new HttpClient(server.url, apiKey, WRITERS);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const { projectId } = await client.json<{ projectId: string }>('POST', '/v1/projects', { name: 'ui-bench' });
    console.log(`ui: writing ${VERSIONS} versions of one path, and two 1 MB text versions`);
    let next = 0;
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        for (let i = next++; i < VERSIONS; i = next++) await client.send('PUT', writePath(projectId, 'analysis/fit.m'), Buffer.from(`x = ${i};\n`));
      }),
    );
    const a = await client.json<{ version: { versionId: string } }>('PUT', writePath(projectId, 'model/big.m'), textVersion(80, ''));
    const b = await client.json<{ version: { versionId: string } }>('PUT', writePath(projectId, 'model/big.m'), textVersion(80, 'gain'));

    const signIn = async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      if (process.env['BENCH_UI_DEBUG'] === '1') page.on('console', (m) => console.log('   page:', m.text()));
      const { url } = await client.json<{ url: string }>('POST', '/v1/ui/links', {});
      await page.goto(url);
      await page.waitForSelector('main h1');
      return { context, page };
    };
    /**
     * ms from navigation start until `selector` is in the page and the frame showing it is painted,
     * on a fresh page load of `hash`: a watcher injected before the page's own scripts (a
     * MutationObserver) notes the moment, then waits one animation frame and one task (the paint).
     * Measured in the page, so nothing of the driver's own round trips is counted.
     */
    const timeTo = async (hash: string, selector: string): Promise<number> => {
      const { context, page } = await signIn();
      try {
        await page.goto('about:blank');
        // Runs in the page (compiled without the DOM's types, hence the casts).
        await page.addInitScript((s: string) => {
          const g = globalThis as unknown as {
            document: { querySelector(q: string): unknown };
            MutationObserver: new (cb: () => void) => { observe(target: unknown, options: object): void; disconnect(): void };
            requestAnimationFrame(cb: () => void): void;
            strataShown?: Promise<number>;
          };
          g.strataShown = new Promise((resolve) => {
            const observer = new g.MutationObserver(() => {
              if (g.document.querySelector(s) === null) return;
              observer.disconnect();
              g.requestAnimationFrame(() => setTimeout(() => resolve(performance.now()), 0));
            });
            observer.observe(g.document, { childList: true, subtree: true });
          });
        }, selector);
        await page.goto(`${server.url}/ui/${hash}`, { waitUntil: 'commit' });
        return (await page.evaluate('globalThis.strataShown')) as number;
      } finally {
        await context.close();
      }
    };
    /**
     * The same inside the running page (its modules loaded, as after a click in the file tree): ms from
     * setting the address's fragment to `selector` shown and painted.
     */
    const navigateTo = async (hash: string, selector: string): Promise<number> => {
      const { context, page } = await signIn();
      try {
        return await page.evaluate(
          ([h, s]) => {
            const g = globalThis as unknown as {
              document: { querySelector(q: string): unknown };
              location: { hash: string };
              MutationObserver: new (cb: () => void) => { observe(target: unknown, options: object): void; disconnect(): void };
              requestAnimationFrame(cb: () => void): void;
            };
            return new Promise<number>((resolve) => {
              const start = performance.now();
              const observer = new g.MutationObserver(() => {
                if (g.document.querySelector(s) === null) return;
                observer.disconnect();
                g.requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - start), 0));
              });
              observer.observe(g.document, { childList: true, subtree: true });
              g.location.hash = h;
            });
          },
          [hash, selector] as const,
        );
      } finally {
        await context.close();
      }
    };
    const historyHash = `#/p/${projectId}/file?path=${encodeURIComponent('analysis/fit.m')}`;
    const diffHash = `#/p/${projectId}/diff?path=${encodeURIComponent('model/big.m')}&a=${a.version.versionId}&b=${b.version.versionId}`;
    await timeTo(historyHash, 'table.timeline tbody tr'); // warm-up: the server's caches, the browser's compile cache
    const history: number[] = [];
    const diff: number[] = [];
    const historyInApp: number[] = [];
    const diffInApp: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      history.push(await timeTo(historyHash, 'table.timeline tbody tr'));
      diff.push(await timeTo(diffHash, 'table.diff tbody tr.change'));
      historyInApp.push(await navigateTo(historyHash.slice(1), 'table.timeline tbody tr'));
      diffInApp.push(await navigateTo(diffHash.slice(1), 'table.diff tbody tr.change'));
      console.log(
        `  round ${round + 1}: history first page ${history.at(-1)!.toFixed(0)} ms (in the running page ${historyInApp.at(-1)!.toFixed(0)}), ` +
          `diff of two 1 MB versions ${diff.at(-1)!.toFixed(0)} ms (in the running page ${diffInApp.at(-1)!.toFixed(0)})`,
      );
    }
    const historyMs = summarize(history);
    const diffMs = summarize(diff);
    const historyInAppMs = summarize(historyInApp);
    const diffInAppMs = summarize(diffInApp);
    const targets = [
      target(`history first page, a path with ${VERSIONS} versions, fresh page load (ms)`, historyMs.median, '<=', 200, 'ms'),
      target(`history first page, a path with ${VERSIONS} versions, in the running page (ms)`, historyInAppMs.median, '<=', 200, 'ms'),
      target('side-by-side diff of two 1 MB text versions, fresh page load (ms)', diffMs.median, '<=', 300, 'ms'),
      target('side-by-side diff of two 1 MB text versions, in the running page (ms)', diffInAppMs.median, '<=', 300, 'ms'),
    ];
    printTargets(targets);
    const file = writeResult('ui', {
      benchmark: 'ui',
      machine: machineInfo(),
      params: { versions: VERSIONS, rounds: ROUNDS, diffBytes: textVersion(80, '').length, browser: browser.version() },
      historyFirstPageMs: { ...historyMs, median: round3(historyMs.median) },
      diffMs: { ...diffMs, median: round3(diffMs.median) },
      historyInRunningPageMs: { ...historyInAppMs, median: round3(historyInAppMs.median) },
      diffInRunningPageMs: { ...diffInAppMs, median: round3(diffInAppMs.median) },
      targets,
    });
    console.log(`result: ${file}`);
  } finally {
    await browser.close();
    client.close();
    await server.close();
    removeDir(dir);
  }
}

await main();
