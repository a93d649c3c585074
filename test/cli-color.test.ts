// Colour on a terminal, as a person sees it: the CLI runs under script(1), which gives it a pseudo-
// terminal for stdout and stderr. Colour appears there unless NO_COLOR is non-empty, never under
// --json, and never on a pipe.

import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort, MAIN, parseJson, runCli, servedHome } from './cli-harness.js';

type Served = Awaited<ReturnType<typeof servedHome>>;
const ESC = '\x1b[';
/** The escape character written as <ESC>, so that expectations read (and lint) as plain text. */
const visible = (text: string) => text.replaceAll('\x1b', '<ESC>');

/** Runs `strata ARGS` on a pseudo-terminal; resolves with everything it wrote (stdout and stderr). */
function onTerminal(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; screen: string }> {
  const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;
  const command = [process.execPath, MAIN, ...args].map(quote).join(' ');
  return new Promise((resolve, reject) => {
    // -e: script exits with the command's status; -f: flush as it comes; -q: no "Script started" lines.
    const child = spawn('script', ['-qfec', command, '/dev/null'], { env: { ...env, SHELL: '/bin/sh' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let screen = '';
    child.stdout.on('data', (chunk: Buffer) => {
      screen += chunk.toString('utf8');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, screen });
    });
  });
}

let served: Served;
let colorEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  served = await servedHome('strata-color-');
  // baseEnv turns colour off for every other test; these decide NO_COLOR themselves.
  colorEnv = { ...served.env };
  delete colorEnv['NO_COLOR'];
  const created = await runCli(['project', 'create', 'colours', '--json'], colorEnv);
  expect(created.code, created.stderr).toBe(0);
  colorEnv['STRATA_PROJECT_ID'] = parseJson<{ projectId: string }>(created).projectId;
}, 60_000);
afterAll(async () => {
  await served?.dispose();
});

describe('colour on a terminal', () => {
  it('an error is red and the hint after it cyan; NO_COLOR=1 turns both off', async () => {
    const env = { ...colorEnv, STRATA_SERVER_URL: `http://127.0.0.1:${await closedPort()}` };
    const colored = await onTerminal(['ls'], env);
    expect(colored.code).toBe(7);
    expect(visible(colored.screen)).toMatch(/strata: <ESC>\[31mcannot reach the Strata server at .*<ESC>\[39m \(SERVER_UNREACHABLE\)/);
    expect(visible(colored.screen)).toMatch(/strata: <ESC>\[36mis the server running\?.*<ESC>\[39m/);
    const plain = await onTerminal(['ls'], { ...env, NO_COLOR: '1' });
    expect(plain.code).toBe(7);
    expect(plain.screen).toMatch(/strata: cannot reach the Strata server at .* \(SERVER_UNREACHABLE\)/);
    expect(plain.screen).not.toContain(ESC);
  });

  it('an empty NO_COLOR does not count as set (no-color.org)', async () => {
    const result = await onTerminal(['nosuchcommand'], { ...colorEnv, NO_COLOR: '' });
    expect(result.code).toBe(2);
    expect(result.screen).toContain(`${ESC}31munknown command 'nosuchcommand'`);
  });

  it('a table header is bold, its rows are not', async () => {
    const result = await onTerminal(['project', 'list'], colorEnv);
    expect(result.code).toBe(0);
    const lines = result.screen.split(/\r?\n/);
    const header = lines.find((line) => line.includes('NAME'))!;
    expect(header.startsWith(`${ESC}1m`)).toBe(true);
    expect(header.endsWith(`${ESC}22m`)).toBe(true);
    const row = lines.find((line) => line.includes('colours'))!;
    expect(row).not.toContain(ESC);
    const plain = await onTerminal(['project', 'list'], { ...colorEnv, NO_COLOR: '1' });
    expect(plain.screen).toContain('colours');
    expect(plain.screen).not.toContain(ESC);
  });

  it('--json is never coloured, not even its error line on stderr', async () => {
    const list = await onTerminal(['project', 'list', '--json'], colorEnv);
    expect(list.code).toBe(0);
    expect(list.screen).toContain('"colours"');
    expect(list.screen).not.toContain(ESC);
    const failed = await onTerminal(['cat', 'missing.txt', '--json'], colorEnv);
    expect(failed.code).toBe(3);
    expect(failed.screen).toContain('PATH_NOT_FOUND');
    expect(failed.screen).not.toContain(ESC);
  });

  it('a pipe gets no colour even without NO_COLOR', async () => {
    const result = await runCli(['project', 'list'], colorEnv);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('colours');
    expect(result.stdout + result.stderr).not.toContain(ESC);
  });
});
