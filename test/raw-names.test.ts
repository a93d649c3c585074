// engine/raw-names.ts: names as bytes (issue 38 item 4). The display form and the UTF-8 scan it rests
// on agree with Node's own decoder about which bytes are stray; the recorded form (stray byte 0xHH ->
// U+EF00+0xHH) goes back to the very same bytes, and no two byte strings share one recorded path.
import { describe, expect, it } from 'vitest';
import { normalizeProjectPath } from '../engine/paths.js';
import { diskPath, encodeName, isCanonicalRawPath, isUtf8Name, nameBytes, parseShownPath, scanUtf8, showNameBytes, showPath } from '../engine/raw-names.js';

const latin1 = (s: string) => Buffer.from(s, 'latin1');

describe('showNameBytes', () => {
  it.each([
    [latin1('bad\xff\xfename.txt'), 'bad\\xff\\xfename.txt'],
    [latin1('d\xe9bit.csv'), 'd\\xe9bit.csv'],
    [Buffer.from('débit.csv'), 'débit.csv'],
    // A truncated sequence, an overlong '/', a surrogate, a code point above U+10FFFF: each byte stray.
    [Buffer.from([0x61, 0xe2, 0x82]), 'a\\xe2\\x82'],
    [Buffer.from([0xc0, 0xaf]), '\\xc0\\xaf'],
    [Buffer.from([0xed, 0xa0, 0x80]), '\\xed\\xa0\\x80'],
    [Buffer.from([0xf4, 0x90, 0x80, 0x80]), '\\xf4\\x90\\x80\\x80'],
    // Valid text after a stray byte is text again.
    [Buffer.concat([latin1('\xff'), Buffer.from('€x')]), '\\xff€x'],
  ])('%s shows as %s', (bytes, shown) => {
    expect(showNameBytes(bytes)).toBe(shown);
  });

  it('finds stray bytes exactly where Node decodes to U+FFFD', () => {
    for (let i = 0; i < 2000; i++) {
      const bytes = Buffer.from(Array.from({ length: 1 + (i % 7) }, (_, k) => (i * 131 + k * 197) % 256));
      let stray = false;
      scanUtf8(bytes, () => undefined, () => {
        stray = true;
      });
      expect(isUtf8Name(bytes)).toBe(!stray);
      if (!bytes.toString('utf8').includes('\ufffd')) expect(stray, bytes.toString('hex')).toBe(false);
    }
  });
});

describe('the recorded form', () => {
  it('maps stray bytes to U+EF80-U+EFFF and back to the same bytes', () => {
    expect(encodeName(latin1('bad\xff\xfename.txt'))).toBe('bad\uefff\ueffename.txt');
    expect(encodeName(Buffer.from('débit.csv'))).toBe('débit.csv');
    for (let i = 0; i < 5000; i++) {
      const bytes = Buffer.from(Array.from({ length: 1 + (i % 9) }, (_, k) => (i * 7919 + k * 104729) % 256).filter((b) => b !== 0x2f && b !== 0));
      const recorded = encodeName(bytes);
      if (recorded === null) continue;
      expect(nameBytes(recorded).equals(bytes), bytes.toString('hex')).toBe(true);
      expect(isCanonicalRawPath(recorded)).toBe(true);
    }
  });

  it('refuses a name whose own text holds a reserved character, so the map stays one-to-one', () => {
    expect(encodeName(Buffer.from('res\uefff.txt'))).toBeNull();
    expect(encodeName(Buffer.concat([latin1('\xff'), Buffer.from('\uef80')]))).toBeNull();
    // U+EF00-U+EF7F stand for no byte (ASCII bytes are never stray): ordinary characters.
    expect(encodeName(Buffer.from('a\uef41'))).toBe('a\uef41');
  });

  it('is refused by the path normalizer where the bytes would be valid UTF-8 (é), or too long on disk', () => {
    expect(() => normalizeProjectPath('\uefc3\uefa9.txt')).toThrow(/stand for bytes that are valid UTF-8/);
    expect(normalizeProjectPath('dir/bad\uefff.txt')).toBe('dir/bad\uefff.txt');
    expect(() => normalizeProjectPath('\uefff'.repeat(256))).toThrow(/longer than 255 bytes/);
    expect(normalizeProjectPath('\uefff'.repeat(255))).toBe('\uefff'.repeat(255));
  });

  it('is shown as \\xHH and typed back the same way; disk paths are the bytes', () => {
    expect(showPath('dir/bad\uefff\ueffe.txt')).toBe('dir/bad\\xff\\xfe.txt');
    expect(parseShownPath('dir/bad\\xff\\xfe.txt')).toBe('dir/bad\uefff\ueffe.txt');
    expect(diskPath('/p', 'a.txt')).toBe('/p/a.txt');
    expect(diskPath('/p', 'd\uefe9/a')).toEqual(Buffer.concat([Buffer.from('/p/d'), latin1('\xe9'), Buffer.from('/a')]));
  });
});

describe('listNames (daemon/watch/list-names.ts)', () => {
  it('gives every entry once, recorded: plain names, stray bytes, a real U+FFFD, a reserved character', async () => {
    const { mkdtemp, rm, writeFile } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { listNames } = await import('../daemon/watch/list-names.js');
    const dir = await mkdtemp(join(tmpdir(), 'strata-list-names-'));
    try {
      await writeFile(join(dir, 'plain.txt'), '');
      await writeFile(Buffer.concat([Buffer.from(`${dir}/`), latin1('bad\xff.txt')]), '');
      await writeFile(join(dir, 'real\ufffd.txt'), '');
      await writeFile(join(dir, 'res\uefff.txt'), '');
      const seen: Array<string | null> = [];
      for await (const { name } of await listNames(dir)) seen.push(name);
      expect(seen.sort()).toEqual([null, 'bad\uefff.txt', 'plain.txt', 'real\ufffd.txt'].sort());
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
