// The bookkeeping under hard links in the mount: link groups (which names are one file, which one is
// the primary, what a restart reads back from the state DB) and the binding's inode table (one inode
// for every name, an alias taking over when the name in use goes). The mount itself: test/mount-hardlinks.test.ts.

import Database from 'better-sqlite3';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { InodeTable } from '../daemon/mount/fuse-inodes.js';
import { LinkGroups, linkRowsIn } from '../daemon/mount/link-groups.js';

const S_IFREG = 0o100000;
const ROOT = 1;
/** The rows are written at the end of the event-loop turn (batched-rows.ts). */
const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('link groups', () => {
  it('keep names in order, dissolve at one name, and read back the same primary after a restart', async () => {
    const db = new Database(':memory:');
    const rows = linkRowsIn(db, 'p1', pino({ level: 'silent' }));
    const links = new LinkGroups(rows);
    expect(links.empty).toBe(true);
    links.add('a', 'b');
    links.add('b', 'dir/c');
    expect(links.namesOf('dir/c')).toEqual(['a', 'b', 'dir/c']);
    expect(links.primaryOf('dir/c')).toBe('a');
    expect(links.groupId('a')).toBe(links.groupId('dir/c'));
    expect(links.primaryOf('unrelated')).toBe('unrelated');

    links.move('dir', 'moved', true);
    expect(links.namesOf('a')).toEqual(['a', 'b', 'moved/c']);
    // The primary goes: the next name in order takes over.
    expect(links.remove('a')).toBe('b');
    expect(links.primaryOf('moved/c')).toBe('b');
    await turn();

    const again = new LinkGroups(linkRowsIn(db, 'p1', pino({ level: 'silent' })));
    expect(again.namesOf('moved/c')).toEqual(['b', 'moved/c']);
    expect([...again.secondaries()]).toEqual(['moved/c']);
    // Another project's rows are its own.
    expect(new LinkGroups(linkRowsIn(db, 'p2', pino({ level: 'silent' }))).empty).toBe(true);

    expect(again.remove('moved/c')).toBe('b');
    expect(again.has('b')).toBe(false);
    expect(again.empty).toBe(true);
    await turn();
    expect(db.prepare('SELECT count(*) AS n FROM mount_links').get()).toEqual({ n: 0 });
  });
});

describe('the inode table with hard links', () => {
  it('gives every name of a linked file one inode, and another name takes over when one goes', () => {
    const table = new InodeTable();
    const a = table.remember(ROOT, 'a', S_IFREG | 0o644);
    table.noteLink(a, 'g1');
    // A lookup of another name that answers with the same link key: the same inode.
    const b = table.remember(ROOT, 'b', S_IFREG | 0o644, 'g1');
    expect(b).toBe(a);
    expect(table.pathOf(a)).toBe('/a');
    table.detach(ROOT, 'a');
    expect(table.pathOf(a)).toBe('/b');
    expect(table.child(ROOT, 'b')).toBe(a);
    // A file that is not linked keeps its own inode.
    expect(table.remember(ROOT, 'c', S_IFREG | 0o644)).not.toBe(a);
    // The last known name gone while the file is open: a name the kernel has not looked up reaches
    // it, and a lookup of that name finds the same inode.
    table.detach(ROOT, 'b');
    table.keepReachable(a, '/d');
    expect(table.pathOf(a)).toBe('/d');
    expect(table.remember(ROOT, 'd', S_IFREG | 0o644, 'g1')).toBe(a);
    expect(table.pathOf(a)).toBe('/d');
    // No name of it known and none left: a new file cannot take its link key (a reused backing inode number) over.
    table.detach(ROOT, 'd');
    expect(table.remember(ROOT, 'e', S_IFREG | 0o644, 'g1')).not.toBe(a);
  });

  it('answers for a linked file by a name whose directories the kernel still knows, and never by a name another inode took', () => {
    const S_IFDIR = 0o040000;
    const S_IFLNK = 0o120000;
    const table = new InodeTable();
    const dir = table.remember(ROOT, 'd', S_IFDIR | 0o755);
    const a = table.remember(dir, 'a', S_IFREG | 0o644, 'g3');
    expect(table.remember(ROOT, 'b', S_IFREG | 0o644, 'g3')).toBe(a);
    expect(table.pathOf(a)).toBe('/d/a');
    // The kernel dropped d/a's dentry and then forgot `d`: the file answers by /b (before, every
    // request about it, its release too, said ENOENT; fsstress).
    table.forget(dir, 1);
    expect(table.pathOf(a)).toBe('/b');
    // Its name now holds a symbolic link the kernel looked up afresh (a restore): that path is not
    // this file (a link(2) of it linked the symbolic link, and the kernel answered EIO).
    const c = table.remember(ROOT, 'c', S_IFREG | 0o644);
    expect(table.remember(ROOT, 'c', S_IFLNK | 0o777)).not.toBe(c);
    expect(table.pathOf(c)).toBeNull();
  });

  it('forgets every name of an inode the kernel forgets', () => {
    const table = new InodeTable();
    const a = table.remember(ROOT, 'a', S_IFREG | 0o644, 'g2');
    table.addName(a, ROOT, 'b');
    table.forget(a, 1);
    expect(table.child(ROOT, 'a')).toBeUndefined();
    expect(table.child(ROOT, 'b')).toBeUndefined();
    expect(table.remember(ROOT, 'b', S_IFREG | 0o644, 'g2')).not.toBe(a);
  });
});
