// `strata man` (roff generated from the command tree) rendered by groff as `man` would, and --help
// on one line per command and option however narrow the terminal.

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allCommands, type CommandSpec } from '../cli/command-tree.js';
import { baseEnv, parseJson, runCli } from './cli-harness.js';

// CI installs groff (.ci/run): there a missing groff fails the rendering test instead of skipping it.
const hasGroff = process.env['CI'] === 'true' || spawnSync('sh', ['-c', 'command -v groff']).status === 0;

let dir: string;
let env: NodeJS.ProcessEnv;
let tree: CommandSpec;
let roff: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'strata-man-'));
  env = baseEnv(join(dir, 'config'));
  tree = parseJson<CommandSpec>(await runCli(['man', '--json'], env));
  const man = await runCli(['man'], env);
  expect(man.code, man.stderr).toBe(0);
  roff = man.stdout;
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('strata man', () => {
  it('has the sections of a manual page, with every command and its options', () => {
    expect(roff.startsWith('.TH STRATA 1 ')).toBe(true);
    for (const section of ['.SH NAME', '.SH SYNOPSIS', '.SH DESCRIPTION', '.SH "GLOBAL OPTIONS"', '.SH COMMANDS', '.SH ENVIRONMENT', '.SH "EXIT STATUS"']) {
      expect(roff).toContain(section);
    }
    const commands = allCommands(tree);
    expect(commands.length).toBeGreaterThan(60);
    for (const command of commands) expect(roff).toContain(`.SS "strata ${command.path.join(' ').replace(/-/g, '\\-')}"`);
    // a line starting with a dot or a quote would be read as a roff request
    const requests = /^\.(TH|SH|SS|TP|PP|B|RS|RE|nf|fi)( |$)/;
    expect(roff.split('\n').filter((line) => /^['.]/.test(line) && !requests.test(line))).toEqual([]);
  });

  it.skipIf(!hasGroff)('renders with groff -man, naming every top-level command, option, variable and exit code', () => {
    const render = spawnSync('groff', ['-man', '-Tutf8', '-ww', '-P-cbou'], { input: roff, encoding: 'utf8' });
    expect(render.stderr).toBe(''); // -ww: any warning (a bad escape, a non-ASCII byte) fails here
    const text = render.stdout;
    for (const command of tree.commands) expect(text, command.name).toContain(`strata ${command.name}`);
    const serve = tree.commands.find((command) => command.name === 'serve')!;
    for (const option of serve.options) expect(text).toContain(option.long);
    expect(text).toContain('the certificate\u2019s private key'); // non-ASCII survives as \[u2019]
    expect(text).toMatch(/ENVIRONMENT\n.*STRATA_SERVER_URL/s);
    expect(text).toMatch(/NO_COLOR/);
    expect(text).toMatch(/EXIT STATUS\n\s+0\s+ok\n/);
    for (const meaning of ['usage', 'not found', 'server unreachable', 'fsck found problems']) expect(text).toContain(meaning);
  });

  it('man --json is the command tree the page and the completions are made from', () => {
    expect(tree.path).toEqual([]);
    const snapshot = tree.commands.find((command) => command.name === 'snapshot')!;
    expect(snapshot.aliases).toEqual(['snapshots']);
    const create = snapshot.commands.find((command) => command.name === 'create')!;
    expect(create.options).toContainEqual({ long: '--message', short: '-m', value: '<message>', description: 'what this snapshot is' });
    expect(tree.options.map((option) => option.long)).toEqual(['--server', '--api-key', '--project', '--json', '--help']);
  });
});

describe('--help, one line per entry', () => {
  it('never wraps a description, even on a narrow terminal', () => {
    const narrow = { ...env, COLUMNS: '40' };
    const help = execFileSync(process.execPath, [join(import.meta.dirname, '..', 'dist', 'cli', 'main.js'), 'serve', '--help'], { env: narrow, encoding: 'utf8' });
    const serve = tree.commands.find((command) => command.name === 'serve')!;
    const lines = help.split('\n');
    for (const option of serve.options) {
      expect(lines.some((line) => line.includes(option.long) && line.includes(option.description)), option.long).toBe(true);
    }
    // no continuation lines: every line under Options: starts an entry
    const body = lines.slice(lines.indexOf('Options:') + 1).filter((line) => line.startsWith('  '));
    expect(body.every((line) => /^ {2}-/.test(line))).toBe(true);
  });
});
