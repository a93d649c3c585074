// Reads lines and counted byte runs from an async iterable of chunks, holding one input chunk (plus a
// line being assembled across chunks, bounded by the caller's limit). Chunks are kept as views, not
// copied: the source must not reuse a chunk's memory after yielding it (Node streams never do).
import { streamError } from './fast-export-events.js';

const LF = 0x0a;
const EMPTY = Buffer.alloc(0);

export class ByteReader {
  private chunk: Buffer = EMPTY;
  private pos = 0;
  /** bytes of the input before `chunk` */
  private base = 0;
  private ended = false;

  constructor(private readonly source: AsyncIterator<Uint8Array>) {}

  /** Bytes consumed so far (for error messages). */
  get offset(): number {
    return this.base + this.pos;
  }

  /** Makes unread bytes available; false at the end of the input. */
  private async fill(): Promise<boolean> {
    while (this.pos >= this.chunk.length) {
      if (this.ended) return false;
      const next = await this.source.next();
      if (next.done === true) {
        this.ended = true;
        return false;
      }
      const value = next.value;
      this.base += this.chunk.length;
      this.chunk = Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
      this.pos = 0;
    }
    return true;
  }

  /**
   * The next line without its LF, or null at the end of the input. A last line without LF means the
   * input was cut off: git ends every command with one.
   */
  async readLine(maxBytes: number): Promise<Buffer | null> {
    if (!(await this.fill())) return null;
    const end = this.chunk.indexOf(LF, this.pos);
    if (end >= 0 && end - this.pos <= maxBytes) {
      const line = this.chunk.subarray(this.pos, end);
      this.pos = end + 1;
      return line;
    }
    // The line continues in later chunks (rare with 64 KiB chunks): assemble it.
    const parts: Buffer[] = [];
    let length = 0;
    for (;;) {
      if (!(await this.fill())) throw streamError('the input ends in the middle of a line (truncated?)', this.offset, Buffer.concat(parts));
      const lf = this.chunk.indexOf(LF, this.pos);
      const stop = lf >= 0 ? lf : this.chunk.length;
      length += stop - this.pos;
      if (length > maxBytes) throw streamError(`a line is longer than ${maxBytes} bytes`, this.offset, Buffer.concat([...parts, this.chunk.subarray(this.pos, stop)]));
      parts.push(this.chunk.subarray(this.pos, stop));
      this.pos = stop;
      if (lf >= 0) {
        this.pos = lf + 1;
        return parts.length === 1 ? parts[0]! : Buffer.concat(parts, length);
      }
    }
  }

  /** The input chunk held now, and where its unread bytes start (no waiting, nothing consumed). */
  get held(): Buffer {
    return this.chunk;
  }

  get heldPos(): number {
    return this.pos;
  }

  /** Consumes `n` bytes of the held chunk (that the caller has looked at through `held`). */
  skipHeld(n: number): void {
    if (this.pos + n > this.chunk.length) throw new RangeError('skipping past the held chunk');
    this.pos += n;
  }

  /** The next byte without consuming it; -1 at the end of the input. */
  async peekByte(): Promise<number> {
    return (await this.fill()) ? this.chunk[this.pos]! : -1;
  }

  /** Consumes one byte (after peekByte said what it is). */
  skipByte(): void {
    this.pos++;
  }

  /**
   * Up to `max` bytes of the next `remaining` (never fewer than 1 unless the input ended, which is an
   * error: the stream announced more data than it holds). A view into the input, not a copy.
   */
  async readSome(remaining: number, max = remaining): Promise<Buffer> {
    if (!(await this.fill())) throw streamError(`the input ends ${remaining} bytes before the announced end of a data block (truncated?)`, this.offset);
    const n = Math.min(remaining, max, this.chunk.length - this.pos);
    const bytes = this.chunk.subarray(this.pos, this.pos + n);
    this.pos += n;
    return bytes;
  }

  /** Exactly `n` bytes in one buffer (callers bound `n`). */
  async readExact(n: number): Promise<Buffer> {
    const parts: Buffer[] = [];
    for (let left = n; left > 0; ) {
      const part = await this.readSome(left);
      parts.push(part);
      left -= part.length;
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts, n);
  }

  /** Stops reading: ends the source (closes a child's pipe, a socket...). */
  async close(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    await this.source.return?.();
  }
}
