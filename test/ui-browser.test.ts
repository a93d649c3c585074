// The history browser in a real browser: Debian's chromium driven by playwright-core, against a
// daemon started through the CLI on loopback, with a project captured from disk. It signs in with
// `strata ui`'s one-time link, clicks through the file tree, a history, a diff, a file restore and a
// snapshot restore (checking the disk afterwards), uses the keyboard alone, reads at 200% zoom, and
// checks what the sign-in must refuse. Screenshots go to test-artifacts/ui/.

import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, MAIN, REPO, startListening } from './cli-harness.js';
import { sh, waitFor } from './daemon-harness.js';

const CHROMIUM = process.env['STRATA_CHROMIUM'] ?? '/usr/bin/chromium';
const ARTIFACTS = join(REPO, 'test-artifacts', 'ui');

const V1 = 'function y = fit(x)\n  % first try\n  y = x * 2;\nend\n';
const V2 = 'function y = fit(x)\n  % linear fit\n  y = x * 2 + 1;\nend\n';
const V3 = 'function y = fit(x)\n  % linear fit\n  y = x * 3 + 1;\n  disp(y);\nend\n';

describe('the history browser in chromium', () => {
  let root: string;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let daemon: Awaited<ReturnType<typeof startListening>> | undefined;
  let browser: Browser | undefined;
  const strata = (args: string[], allowFail = false) => sh(process.execPath, [MAIN, ...args], { cwd: dir, env, allowFail, timeoutMs: 20_000 });
  const history = async (path: string) => JSON.parse((await strata(['history', path, '--json'])).stdout).items as Array<{ versionId: string; size: number }>;
  const link = async () => JSON.parse((await strata(['ui', '--no-open', '--json'])).stdout) as { url: string; expiresAt: string; opened: boolean };
  const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'strata-ui-'));
    dir = join(root, 'thesis');
    env = { ...baseEnv(join(root, 'config')), STRATA_HOME: join(root, 'home') };
    await mkdir(ARTIFACTS, { recursive: true });
    await mkdir(dir);
    await sh(process.execPath, [MAIN, 'init', dir], { cwd: root, env, timeoutMs: 20_000 });
    daemon = await startListening(['daemon', '--listen', '127.0.0.1:0'], env);
    for (const [i, content] of [V1, V2, V3].entries()) {
      await writeFile(join(dir, 'fit.m'), content);
      // Bounds, not delays: on a loaded CI machine a capture and the CLI that looks for it can take a while.
      await waitFor(`version ${i + 1} of fit.m`, async () => ((await history('fit.m').catch(() => [])).length === i + 1 ? true : undefined), 60_000);
    }
    await mkdir(join(dir, 'data'));
    await writeFile(join(dir, 'data', 'notes.md'), '# Notes\n');
    await waitFor('notes.md versioned', async () => ((await history('data/notes.md').catch(() => [])).length === 1 ? true : undefined), 60_000);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    if (daemon !== undefined && daemon.child.exitCode === null) {
      daemon.child.kill('SIGTERM');
      await waitFor('the daemon to stop', () => (daemon!.child.exitCode !== null || daemon!.child.signalCode !== null ? true : undefined), 20_000).catch(() => daemon!.child.kill('SIGKILL'));
    }
    await rm(root, { recursive: true, force: true });
  });

  it('signs in with a one-time link, and the address keeps no credential', async () => {
    const { url, opened } = await link();
    expect(opened).toBe(false);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/ui\/open\?token=[A-Za-z0-9_-]{43}$/);
    const context = await browser!.newContext();
    const page = await context.newPage();
    await page.goto(url);
    await page.getByRole('link', { name: 'thesis' }).waitFor();
    expect(page.url()).toBe(`${daemon!.url}/ui/#/`);
    const cookies = await context.cookies();
    expect(cookies).toEqual([expect.objectContaining({ name: 'strata_session', httpOnly: true, sameSite: 'Strict' })]);
    await shot(page, '01-projects');

    // The link is spent: a second visit is refused, in a page that says what to do.
    const again = await (await browser!.newContext()).newPage();
    const response = await again.goto(url);
    expect(response!.status()).toBe(401);
    expect(await again.textContent('body')).toContain('strata ui');

    // The cookie alone is not enough (another local server on another port would receive it too): the
    // page's proof must come with it. Nor does another origin get anywhere.
    const bare = await context.request.get(`${daemon!.url}/v1/projects`);
    expect(bare.status()).toBe(401);
    const foreign = await context.request.post(`${daemon!.url}/v1/projects`, { headers: { origin: 'http://127.0.0.1:1' }, data: { name: 'csrf' } });
    expect(foreign.status()).toBe(403);

    // A fresh load of a project's address starts its requests from the script inside the page
    // (boot.js, allowed by its hash in the policy): the browser refuses nothing.
    const refused: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) refused.push(message.text());
    });
    await page.getByRole('link', { name: 'thesis' }).click();
    await page.reload();
    await page.getByRole('link', { name: 'fit.m' }).waitFor();
    expect(await page.evaluate('globalThis.strataPrefetched instanceof Map')).toBe(true);
    expect(refused).toEqual([]);
    await context.close();
  });

  it('tree → history → diff → restore, then the file on disk is the restored one', async () => {
    const context = await browser!.newContext();
    const page = await context.newPage();
    await page.goto((await link()).url);
    await page.getByRole('link', { name: 'thesis' }).click();
    await page.getByRole('link', { name: 'fit.m' }).click();
    const rows = page.locator('table.timeline tbody tr');
    await expect.poll(() => rows.count()).toBe(3);
    expect(await page.getByRole('button', { name: 'Show older versions' }).isHidden()).toBe(true);
    await shot(page, '02-history');

    // The newest two are chosen: the diff shows the last change, coloured as MATLAB.
    await page.getByRole('link', { name: 'Compare the two chosen versions' }).click();
    const diff = page.locator('table.diff');
    await diff.waitFor();
    const oldSide = await diff.locator('td.old').allTextContents();
    const newSide = await diff.locator('td.new').allTextContents();
    expect(oldSide).toContain('  y = x * 2 + 1;');
    expect(newSide).toEqual(expect.arrayContaining(['  y = x * 3 + 1;', '  disp(y);']));
    expect(await diff.locator('.tok-kw', { hasText: 'function' }).count()).toBeGreaterThan(0);
    await shot(page, '03-diff');

    // Restore the first version: the dialog says what will change; the disk follows.
    await page.goBack();
    await expect.poll(() => rows.count()).toBe(3);
    await rows.nth(2).getByRole('button', { name: 'Restore' }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.textContent()).toMatch(/fit\.m is 6\d B now .*It will get the content of .*\(5\d B\)/s);
    await shot(page, '04-restore-confirm');
    await dialog.getByRole('button', { name: 'Restore this version' }).click();
    await expect.poll(() => rows.count()).toBe(4);
    await waitFor('fit.m on disk to be the first version again', async () => ((await readFile(join(dir, 'fit.m'), 'utf8')) === V1 ? true : undefined), 20_000);
    const kinds = (await history('fit.m')).length;
    expect(kinds).toBe(4);
    await context.close();
  });

  it('shows the tree as it was at any moment', async () => {
    // History is newest first: the last entry is fit.m's first version, written before data/notes.md.
    const first = (await history('fit.m')).at(-1) as unknown as { timestamp: string; size: number };
    const projectId = JSON.parse((await strata(['status', '--json'])).stdout).projects[0].projectId as string;
    const context = await browser!.newContext();
    const page = await context.newPage();
    await page.goto((await link()).url);
    await page.getByRole('link', { name: 'thesis' }).waitFor();
    await page.goto(`${daemon!.url}/ui/#/p/${projectId}?at=${encodeURIComponent(first.timestamp)}`);
    await page.getByText('The files as they were at').waitFor();
    const rows = await page.locator('main table tbody tr').allTextContents();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain('fit.m');
    expect(rows[0]).toContain(`${first.size} B`);
    await shot(page, '05-at-a-moment');
    await context.close();
  });

  it('a snapshot restore says what it will change, and the directory follows', async () => {
    await strata(['snapshot', 'create', '-m', 'before the rewrite']);
    await writeFile(join(dir, 'data', 'notes.md'), '# Notes\nrewritten\n');
    await waitFor('the rewrite versioned', async () => ((await history('data/notes.md')).length === 2 ? true : undefined), 20_000);
    const context = await browser!.newContext();
    const page = await context.newPage();
    await page.goto((await link()).url);
    await page.getByRole('link', { name: 'thesis' }).click();
    await page.getByRole('link', { name: 'Snapshots' }).click();
    await page.getByRole('button', { name: 'Restore' }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.textContent()).toContain('change: data/notes.md');
    await shot(page, '06-snapshot-restore');
    await dialog.getByRole('button', { name: 'Restore the snapshot' }).click();
    await waitFor('notes.md back as the snapshot had it', async () => ((await readFile(join(dir, 'data', 'notes.md'), 'utf8')) === '# Notes\n' ? true : undefined), 20_000);
    await context.close();
  });

  it('renders the API reference from /openapi.json: every route served is on the page', async () => {
    const page = await browser!.newPage();
    try {
      const doc = (await (await fetch(`${daemon!.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
      const routes = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));
      expect(routes).toEqual(expect.arrayContaining(['POST /v1/ui/links', 'GET /v1/daemon/status', 'PUT /v1/projects/{projectId}/fs/write']));
      await page.goto(`${daemon!.url}/ui/api.html`);
      await page.locator('article.route').first().waitFor();
      expect((await page.locator('article.route h3').allTextContents()).sort()).toEqual(routes.sort());
      await shot(page, '07-api-reference');
    } finally {
      await page.close();
    }
  });

  it('settings: retention and the versioning policy are changed from the page', async () => {
    const context = await browser!.newContext();
    const page = await context.newPage();
    await page.goto((await link()).url);
    await page.getByRole('link', { name: 'thesis' }).click();
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Versions kept per file').fill('25');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('25 versions per file are kept').waitFor();
    // Down to 1: fit.m has older versions, so the page says what it would prune and asks first.
    await page.getByLabel('Versions kept per file').fill('1');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.textContent()).toMatch(/This prunes \d+ older versions .*fit\.m: \d+ versions/s);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(((await history('fit.m')) as unknown[]).length).toBeGreaterThan(1);
    await page.getByLabel('Versions kept per file').fill('25');
    await page.getByLabel('Always versioned').fill('.m .py .rs .h5');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByText('Saved: new writes follow it.').waitFor();
    const policy = JSON.parse((await strata(['policy', 'show', '--json'])).stdout) as { alwaysExtensions: string[] };
    expect(policy.alwaysExtensions).toEqual(['.m', '.py', '.rs', '.h5']);
    const retention = JSON.parse((await strata(['retention', 'get', '--json'])).stdout) as { maxVersions: number };
    expect(retention.maxVersions).toBe(25);
    await context.close();
  });

  it('works from the keyboard alone and reads at 200% zoom without sideways scrolling', async () => {
    // 200% zoom of a 1280-pixel window: a 640 CSS-pixel viewport at device scale 2.
    const context = await browser!.newContext({ viewport: { width: 640, height: 800 }, deviceScaleFactor: 2 });
    const page = await context.newPage();
    await page.goto((await link()).url);
    await page.getByRole('link', { name: 'thesis' }).waitFor();
    let focused = '';
    for (let i = 0; i < 20 && focused !== 'thesis'; i++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate('document.activeElement?.textContent ?? ""');
    }
    expect(focused).toBe('thesis');
    await page.keyboard.press('Enter');
    await page.getByRole('link', { name: 'fit.m' }).waitFor();
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    await shot(page, '08-zoom-200');
    await context.close();
  });
});
