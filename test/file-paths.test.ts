// Path arguments in a project directory are relative to the working directory (cli/file-paths.ts).
import { mkdir, mkdtemp, realpath, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliError } from '../cli/errors.js';
import { toProjectPath } from '../cli/file-paths.js';

describe('toProjectPath', () => {
  let base: string;
  let root: string;
  beforeAll(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'strata-file-paths-')));
    root = join(base, 'thesis');
    await mkdir(join(root, 'analysis', 'deep'), { recursive: true });
    await symlink(root, join(base, 'link'));
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('is the argument itself when the project was named explicitly', () => {
    expect(toProjectPath('fit.m', undefined, join(root, 'analysis'))).toBe('fit.m');
    expect(toProjectPath('../x', undefined, root)).toBe('../x');
  });

  it('resolves against the working directory inside the project', () => {
    const analysis = join(root, 'analysis');
    expect(toProjectPath('fit.m', root, root)).toBe('fit.m');
    expect(toProjectPath('fit.m', root, analysis)).toBe('analysis/fit.m');
    expect(toProjectPath('./deep/../fit.m', root, analysis)).toBe('analysis/fit.m');
    expect(toProjectPath('../a.m', root, analysis)).toBe('a.m');
    expect(toProjectPath('', root, analysis)).toBe('analysis');
    expect(toProjectPath('.', root, root)).toBe('');
    expect(toProjectPath('deep/', root, analysis)).toBe('analysis/deep/');
    expect(toProjectPath('**/*.h5', root, analysis)).toBe('analysis/**/*.h5');
    expect(toProjectPath('/', root, analysis)).toBe('');
  });

  it('takes absolute paths inside the project, through a symlink too', () => {
    expect(toProjectPath(join(root, 'analysis', 'fit.m'), root, root)).toBe('analysis/fit.m');
    expect(toProjectPath(join(base, 'link', 'analysis'), root, root)).toBe('analysis');
    // a working directory reached through the symlink is still inside
    expect(toProjectPath('fit.m', root, join(base, 'link', 'analysis'))).toBe('analysis/fit.m');
  });

  it('refuses paths outside the project with a usage error', () => {
    for (const arg of ['../outside.m', '/etc/passwd', '../../x']) {
      let error: unknown;
      try {
        toProjectPath(arg, root, root);
      } catch (caught) {
        error = caught;
      }
      expect(error, arg).toBeInstanceOf(CliError);
      expect((error as CliError).code).toBe('USAGE');
      expect((error as CliError).message).toContain('outside the project directory');
    }
  });
});
