// Versions of one path sent in one request, each on the one before (a workstation's edit and its later
// deletion or next save, made while the server was away), after the path moved on on the server. The
// first is resolved against what the server has (an edit against a deletion brings the file back);
// the next ones are then based on the server's current version again and simply follow it.
//
// The sync model's seed 39001 path 4: with the server down, wsC deleted `a/b` and wsA wrote `a/b`
// then ran `rm -r a`. wsC's deletion reached the server first; wsA's write and deletion came in one
// request. Both failed their first attempt (based on what the server no longer had); the write then
// brought the file back, and the deletion — based on that very write, now current — was judged
// "a deletion against an edit" and superseded by its own base. The server's head kept wsA's `a/b`,
// wsA (its own id, 'known' when pulled) had none, and every workstation said in sync.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, openHarness } from './control-api-harness.js';
import { syncedVersions } from './helpers/synced-versions.js';

let h: Harness;
let project: string;

beforeAll(async () => {
  h = await openHarness();
  project = await h.createProject('chain');
});

afterAll(async () => {
  await h.dispose();
});

const { made, send, read, history } = syncedVersions(() => h, () => project);
const exists = async (path: string) => (await h.request('GET', `/v1/projects/${project}/fs/read?path=${encodeURIComponent(path)}`)).statusCode === 200;

describe('sync versions: a chain of one path in one request, after the path moved on', () => {
  it('deleted elsewhere; an edit and its deletion: the edit brings the file back, its deletion deletes it', async () => {
    const base = await made('a/b', null, 'a/b v1\n', '2026-11-29T06:00:00.000Z');
    await send('wsA', [base]);
    const elsewhere = await made('a/b', base.versionId, null, '2026-11-29T06:01:00.000Z');
    expect((await send('wsC', [elsewhere])).results[0]).toMatchObject({ result: 'applied' });
    const edit = await made('a/b', base.versionId, 'v67\n', '2026-11-29T06:02:00.000Z');
    const deletion = await made('a/b', edit.versionId, null, '2026-11-29T06:03:00.000Z');
    expect((await send('wsA', [edit, deletion])).results).toEqual([
      { versionId: edit.versionId, result: 'applied', path: 'a/b' },
      { versionId: deletion.versionId, result: 'applied', path: 'a/b' },
    ]);
    expect(await exists('a/b')).toBe(false);
    expect((await history('a/b')).map((v) => v.versionId)).toEqual([deletion.versionId, edit.versionId, elsewhere.versionId, base.versionId]);
  });

  it('deleted elsewhere; two saves: both are versions of the file, no conflict copy of its own save', async () => {
    const base = await made('fit.m', null, 'fit v1\n', '2026-11-29T06:10:00.000Z');
    await send('wsA', [base]);
    expect((await send('wsC', [await made('fit.m', base.versionId, null, '2026-11-29T06:11:00.000Z')])).results[0]).toMatchObject({ result: 'applied' });
    const first = await made('fit.m', base.versionId, 'offline 1\n', '2026-11-29T06:12:00.000Z');
    const second = await made('fit.m', first.versionId, 'offline 2\n', '2026-11-29T06:13:00.000Z');
    expect((await send('wsA', [first, second])).results).toEqual([
      { versionId: first.versionId, result: 'applied', path: 'fit.m' },
      { versionId: second.versionId, result: 'applied', path: 'fit.m' },
    ]);
    expect(await read('fit.m')).toBe('offline 2\n');
    expect(await exists('fit (conflict wsA 2026-11-29 0613).m')).toBe(false);
  });

  it('the same bytes made elsewhere; that file and then its deletion: the deletion deletes it', async () => {
    const base = await made('notes.txt', null, 'notes v1\n', '2026-11-29T06:20:00.000Z');
    await send('wsA', [base]);
    const elsewhere = await made('notes.txt', base.versionId, 'both made this\n', '2026-11-29T06:21:00.000Z');
    expect((await send('wsC', [elsewhere])).results[0]).toMatchObject({ result: 'applied' });
    const same = await made('notes.txt', base.versionId, 'both made this\n', '2026-11-29T06:22:00.000Z');
    const deletion = await made('notes.txt', same.versionId, null, '2026-11-29T06:23:00.000Z');
    expect((await send('wsA', [same, deletion])).results).toEqual([
      { versionId: same.versionId, result: 'same', path: 'notes.txt', currentVersionId: elsewhere.versionId },
      { versionId: deletion.versionId, result: 'applied', path: 'notes.txt' },
    ]);
    expect(await exists('notes.txt')).toBe(false);
  });
});
