// engine/raw-names.ts: names as bytes (issue 38 item 4). The display form and the UTF-8 scan it rests
// on agree with Node's own decoder about which bytes are stray.
import { describe, expect, it } from 'vitest';
import { isUtf8Name, scanUtf8, showNameBytes } from '../engine/raw-names.js';

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
