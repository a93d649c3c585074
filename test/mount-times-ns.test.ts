// File and directory times on the mount are exact to the nanosecond and stay so across a restart and
// a kill -9 (issue 39 item 3; directories' were kept in memory only). They travelled as one double of milliseconds: `touch -d '… .123456789'` read
// back `.123456787`, and an ignored file's (Node's utimes, seconds in a double) `.123456716`. A real
// daemon, a real FUSE mount, real touch, cp -p, python's os.utime and stat.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inMount, type MountedDir, mountProject, sh, sleep, waitExit } from './mount-harness.js';

let m: MountedDir | undefined;

afterAll(async () => {
  await m?.dispose();
}, 60_000);

const NAMES = ['f', 'am', 'now', 'copied', 'utime', 'l', 'x.pyc', 'y.pyc', 'd', 'moved', 'untarred', 'synced'];

/** `mtime|atime` of each name as stat prints them (%y, %x: to the nanosecond), never through a link. */
async function shown(names: string[]): Promise<Record<string, string>> {
  const out = (await inMount(m!, `export TZ=UTC; stat -c '%n|%y|%x' ${names.join(' ')}`)).stdout;
  return Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((line) => {
        const [name, mtime, atime] = line.split('|');
        return [name!, `${mtime}|${atime}`];
      }),
  );
}

const at = (time: string) => `${time} +0000`;

describe('file times on the mount', () => {
  it('are exact to the nanosecond, after a restart and after a kill -9 too', async () => {
    m = await mountProject();
    const root = m.root;
    // Set outside the mount (a local filesystem keeps nanoseconds): cp -p takes both times along.
    const source = join(root, 'source.txt');
    await writeFile(source, 'copied\n');
    await sh('bash', ['-c', `TZ=UTC touch -m -d '2016-03-04 05:06:07.111111111' ${source}; TZ=UTC touch -a -d '2016-03-04 05:06:08.222222223' ${source}`]);
    // tar's pax format keeps nanoseconds; rsync -t sets the mtime (to the nanosecond, protocol 31 on).
    const outside = join(root, 'outside');
    await sh('bash', ['-euc', `mkdir ${outside}; cd ${outside}; printf 't\\n' > untarred; printf 's\\n' > synced; TZ=UTC touch -d '2010-09-10 11:12:13.888888889' untarred synced; tar --format=posix -cf ../in.tar untarred`]);

    await inMount(
      m,
      [
        'export TZ=UTC',
        "printf 'f\\n' > f; touch -d '2019-05-06 07:08:09.123456789' f",
        // -m and -a one at a time (UTIME_OMIT for the other).
        "printf 'am\\n' > am; touch -m -d '2018-01-02 03:04:05.000000001' am; touch -a -d '2017-12-31 23:59:59.999999999' am",
        "printf 'now\\n' > now; touch now",
        `cp -p ${source} copied`,
        "printf 'u\\n' > utime; python3 -c 'import os; os.utime(\"utime\", ns=(1500000000987654321, 1400000000123456789))'",
        "mkdir d; touch -d '2015-01-01 00:00:00.333333333' d",
        // A directory keeps its times through a rename, as on any filesystem.
        "mkdir e; touch -d '2011-08-09 10:11:12.777777777' e; mv e moved",
        "ln -s f l; touch -h -d '2014-02-03 04:05:06.444444444' l",
        // Ignored names: files of the backing directory, a link among them set without following it.
        "printf 'x\\n' > x.pyc; touch -d '2013-06-07 08:09:10.555555555' x.pyc",
        "ln -s x.pyc y.pyc; touch -h -d '2012-07-08 09:10:11.666666667' y.pyc",
        `tar -xf ${join(root, 'in.tar')}`,
        `rsync -t ${join(outside, 'synced')} synced`,
      ].join('; '),
    );
    const expected: Record<string, string> = {
      f: `${at('2019-05-06 07:08:09.123456789')}|${at('2019-05-06 07:08:09.123456789')}`,
      am: `${at('2018-01-02 03:04:05.000000001')}|${at('2017-12-31 23:59:59.999999999')}`,
      copied: `${at('2016-03-04 05:06:07.111111111')}|${at('2016-03-04 05:06:08.222222223')}`,
      utime: `${at('2014-05-13 16:53:20.123456789')}|${at('2017-07-14 02:40:00.987654321')}`,
      l: `${at('2014-02-03 04:05:06.444444444')}|${at('2014-02-03 04:05:06.444444444')}`,
      'x.pyc': `${at('2013-06-07 08:09:10.555555555')}|${at('2013-06-07 08:09:10.555555555')}`,
      'y.pyc': `${at('2012-07-08 09:10:11.666666667')}|${at('2012-07-08 09:10:11.666666667')}`,
      d: `${at('2015-01-01 00:00:00.333333333')}|${at('2015-01-01 00:00:00.333333333')}`,
      moved: `${at('2011-08-09 10:11:12.777777777')}|${at('2011-08-09 10:11:12.777777777')}`,
    };
    const mtimes = { untarred: at('2010-09-10 11:12:13.888888889'), synced: at('2010-09-10 11:12:13.888888889') };

    const first = await shown(NAMES);
    expect(first).toMatchObject(expected);
    for (const [name, mtime] of Object.entries(mtimes)) expect(first[name]!.split('|')[0], name).toBe(mtime);
    // touch (now): both times the same moment, as stat showed it right away.
    const [nowM, nowA] = first['now']!.split('|');
    expect(nowA).toBe(nowM);

    // A clean restart.
    await m.idle();
    expect(await m.stop()).toBe(0);
    m = await mountProject({ root });
    expect(await shown(NAMES)).toEqual(first);

    // A kill -9 once the times were written (every 250 ms: times.ts).
    await m.idle();
    await sleep(600);
    m.child.kill('SIGKILL');
    await waitExit(m.child, 10_000);
    m = await mountProject({ root });
    expect(await shown(NAMES)).toEqual(first);
  }, 180_000);
});
