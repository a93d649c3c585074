// The two forms of fast-import's `data` command: `data <count>` followed by exactly that many bytes,
// and `data <<DELIM` followed by lines up to one that is exactly DELIM (each line's LF belongs to the
// data). Either is followed by one optional LF, which git's `skip_optional_lf()` consumes and so do we.
import type { ByteReader } from './byte-reader.js';
import { type BlobData, streamError } from './fast-export-events.js';

export type DataHeader = { kind: 'counted'; size: number } | { kind: 'delimited'; delimiter: Buffer };

const LF = 0x0a;
const LF_BYTES = Buffer.from('\n');

/** Parses `data <count>` / `data <<DELIM`; `line` is the whole line, `offset` where it started. */
export function parseDataHeader(line: Buffer, offset: number): DataHeader {
  if (line.length < 6 || line.toString('latin1', 0, 5) !== 'data ') throw streamError('expected a data command', offset, line);
  const arg = line.subarray(5);
  if (arg[0] === 0x3c && arg[1] === 0x3c) {
    if (arg.length === 2) throw streamError('the data delimiter is empty', offset, line);
    return { kind: 'delimited', delimiter: Buffer.from(arg.subarray(2)) };
  }
  const text = arg.toString('latin1');
  const size = Number(text);
  if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(size)) throw streamError('the data length is not a number', offset, line);
  return { kind: 'counted', size };
}

/**
 * A data block read as a stream (see BlobData). The parser calls finish() before it reads anything
 * else: it skips what the consumer left unread and makes later reads fail, so a consumer that keeps
 * the iterator too long gets an error instead of bytes of the next command.
 */
export class DataStream implements BlobData {
  private started = false;
  private closed = false;
  private busy = false;
  private remaining: number;
  private ended = false;
  private lfPending = false;

  constructor(
    private readonly reader: ByteReader,
    private readonly header: DataHeader,
    private readonly maxLineBytes: number,
  ) {
    this.remaining = header.kind === 'counted' ? header.size : 0;
  }

  [Symbol.asyncIterator](): AsyncIterator<Buffer, undefined> {
    if (this.started) throw new TypeError('blob data can be iterated only once');
    this.started = true;
    return {
      next: () => this.next(),
      return: async () => ({ done: true, value: undefined }),
    };
  }

  private async next(): Promise<IteratorResult<Buffer, undefined>> {
    if (this.closed) throw new TypeError('blob data read after the parser moved on to the next event');
    if (this.busy) throw new TypeError('blob data read concurrently');
    this.busy = true;
    try {
      const chunk = await this.pull();
      return chunk === null ? { done: true, value: undefined } : { done: false, value: chunk };
    } finally {
      this.busy = false;
    }
  }

  private async pull(): Promise<Buffer | null> {
    if (this.header.kind === 'counted') {
      if (this.remaining === 0) return null;
      const bytes = await this.reader.readSome(this.remaining);
      this.remaining -= bytes.length;
      return bytes;
    }
    if (this.lfPending) {
      this.lfPending = false;
      return LF_BYTES;
    }
    if (this.ended) return null;
    const start = this.reader.offset;
    const line = await this.reader.readLine(this.maxLineBytes);
    if (line === null) throw streamError(`the input ends before the data delimiter ${JSON.stringify(this.header.delimiter.toString('utf8'))} (truncated?)`, start);
    if (line.equals(this.header.delimiter)) {
      this.ended = true;
      return null;
    }
    this.lfPending = true;
    return line;
  }

  /** Skips the unread rest and the optional LF; the stream is unreadable afterwards. */
  async finish(): Promise<void> {
    if (this.busy) throw new TypeError('the blob data is still being read: finish reading it before asking for the next event');
    this.closed = true;
    while ((await this.pull()) !== null);
    await skipOptionalLf(this.reader);
  }
}

/** A data block read whole into memory (commit and tag messages), at most `maxBytes`. */
export async function readDataBytes(reader: ByteReader, header: DataHeader, maxBytes: number, maxLineBytes: number): Promise<Buffer> {
  const start = reader.offset;
  if (header.kind === 'counted') {
    if (header.size > maxBytes) throw streamError(`a message of ${header.size} bytes is larger than the limit of ${maxBytes}`, start);
    const bytes = Buffer.from(await reader.readExact(header.size)); // a copy: the event outlives the input chunk
    await skipOptionalLf(reader);
    return bytes;
  }
  const stream = new DataStream(reader, header, maxLineBytes);
  const parts: Buffer[] = [];
  let length = 0;
  for await (const part of stream) {
    length += part.length;
    if (length > maxBytes) throw streamError(`a message is larger than the limit of ${maxBytes} bytes`, start);
    parts.push(part);
  }
  await stream.finish();
  return Buffer.concat(parts, length);
}

async function skipOptionalLf(reader: ByteReader): Promise<void> {
  if ((await reader.peekByte()) === LF) reader.skipByte();
}
