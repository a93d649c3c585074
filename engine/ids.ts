import { randomBytes } from 'node:crypto';
import type { Clock, IdGenerator } from './ports/world.js';

/**
 * UUIDv7 (RFC 9562): 48-bit millisecond timestamp, then random bits. Ids made by one generator are
 * strictly increasing even within one millisecond (the 12-bit rand_a field is used as a counter), so
 * sorting version ids sorts them by creation.
 */
export function createIdGenerator(clock: Clock, random: (n: number) => Buffer = randomBytes): IdGenerator {
  let lastMs = -1;
  let counter = 0;
  // Ids take their random bits from a pool filled 4 KiB at a time: a call into the CSPRNG per id was
  // a third of the cost of planning a 5,000-file git push (bench/git-push.ts). Secrets (randomHex)
  // still come straight from `random`, never from a buffer that outlives them.
  const pooled = random === randomBytes ? randomPool() : random;
  return {
    uuid() {
      let ms = clock.now();
      if (ms <= lastMs) {
        ms = lastMs;
        counter += 1;
        if (counter > 0xfff) {
          // 4096 ids in one millisecond: borrow the next millisecond rather than repeat.
          ms += 1;
          counter = 0;
        }
      } else {
        counter = pooled(2).readUInt16BE(0) & 0x7ff; // leave room to count up
      }
      lastMs = ms;
      const bytes = pooled(16);
      bytes.writeUIntBE(ms, 0, 6);
      bytes[6] = 0x70 | ((counter >> 8) & 0x0f);
      bytes[7] = counter & 0xff;
      bytes[8] = 0x80 | (bytes[8]! & 0x3f);
      const hex = bytes.toString('hex');
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    },
    randomHex(n: number) {
      return random(n).toString('hex');
    },
  };
}

/** Random bytes handed out from a 4 KiB buffer, each byte once. */
function randomPool(): (n: number) => Buffer {
  let pool = Buffer.alloc(0);
  let offset = 0;
  return (n) => {
    if (offset + n > pool.length) {
      pool = randomBytes(Math.max(4096, n));
      offset = 0;
    }
    offset += n;
    return pool.subarray(offset - n, offset);
  };
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}
