// The order of the mount's namespace changes (daemon/mount/namespace-lock.ts): renames run alone,
// other changes beside each other, and a waiting rename is not starved by a stream of creates.
import { describe, expect, it } from 'vitest';
import { NamespaceLock } from '../daemon/mount/namespace-lock.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** A task that records when it starts and ends, and ends when told to. */
function task(log: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  return {
    run: async () => {
      log.push(`${name}+`);
      await done;
      log.push(`${name}-`);
    },
    finish: () => finish(),
  };
}

describe('the namespace lock', () => {
  it('runs shared work together, a rename alone, and shared work that came after a waiting rename after it', async () => {
    const lock = new NamespaceLock();
    const log: string[] = [];
    const [a, b, rename, c] = ['a', 'b', 'rename', 'c'].map((name) => task(log, name)) as [ReturnType<typeof task>, ReturnType<typeof task>, ReturnType<typeof task>, ReturnType<typeof task>];
    const runs = [lock.shared(a.run), lock.shared(b.run), lock.exclusive(rename.run), lock.shared(c.run)];
    await tick();
    expect(log).toEqual(['a+', 'b+']);
    a.finish();
    await tick();
    expect(log).toEqual(['a+', 'b+', 'a-']);
    b.finish();
    await tick();
    expect(log).toEqual(['a+', 'b+', 'a-', 'b-', 'rename+']);
    rename.finish();
    await tick();
    expect(log.slice(4)).toEqual(['rename+', 'rename-', 'c+']);
    c.finish();
    await Promise.all(runs);
    expect(log.at(-1)).toBe('c-');
  });

  it('lets the next work in when work fails', async () => {
    const lock = new NamespaceLock();
    await expect(lock.exclusive(async () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    await expect(lock.shared(async () => 'ran')).resolves.toBe('ran');
    await expect(lock.exclusive(async () => 'alone')).resolves.toBe('alone');
  });
});
