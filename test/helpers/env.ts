// An environment variable set for the tests of one describe block (and the daemons they start in
// this process), put back as it was after them.
import { afterAll, beforeAll } from 'vitest';

export function useEnv(name: string, value: string): void {
  let before: string | undefined;
  beforeAll(() => {
    before = process.env[name];
    process.env[name] = value;
  });
  afterAll(() => {
    if (before === undefined) delete process.env[name];
    else process.env[name] = before;
  });
}
