// How `strata daemon` and `strata serve` write their logs on stderr. A person at a terminal reads
// one line per event, "12:01:02 INFO message key=value"; anything else (systemd's journal, a file, a
// log shipper) gets pino's JSON lines, one object per line. --log-format forces either.

import { Option } from 'commander';
import type { DestinationStream, Logger } from 'pino';
import { colorEnabled, type Paint, painter, type Style } from './color.js';
import { usageError } from './errors.js';
import { sanitizeLine } from './output.js';

export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** The flag's value, else pretty on a terminal and JSON elsewhere. */
export function resolveLogFormat(flag: string | undefined, stderr: { isTTY?: boolean } = process.stderr): LogFormat {
  if (flag === undefined) return stderr.isTTY === true ? 'pretty' : 'json';
  if ((LOG_FORMATS as readonly string[]).includes(flag)) return flag as LogFormat;
  throw usageError(`--log-format must be json or pretty, got '${flag}'`, { field: 'log-format' });
}

// pino is imported when a service starts, not with the command tree: loading it costs ~50 ms that
// every other command (and `strata --help`) would pay for nothing.

/** Where pino writes: fd 2 as JSON, or through the line formatter below. */
export async function logDestination(format: LogFormat): Promise<DestinationStream> {
  if (format === 'json') {
    const { default: pino } = await import('pino');
    return pino.destination(2);
  }
  const paint = painter(colorEnabled(process.stderr));
  // pino hands a stream one complete JSON line per write.
  return { write: (line: string) => void process.stderr.write(formatLogLine(line, paint)) };
}

const LEVELS: Record<number, [string, Style | null]> = {
  10: ['TRACE', 'dim'],
  20: ['DEBUG', 'dim'],
  30: ['INFO', null],
  40: ['WARN', 'yellow'],
  50: ['ERROR', 'red'],
  60: ['FATAL', 'red'],
};
/** Fields every record has, or that say nothing to the person at the terminal. */
const OMITTED = new Set(['level', 'time', 'msg', 'pid', 'hostname']);

function two(n: number): string {
  return String(n).padStart(2, '0');
}

function value(raw: unknown): string {
  // An error is its message here (the stack is in the JSON format).
  if (raw !== null && typeof raw === 'object' && typeof (raw as { message?: unknown }).message === 'string') {
    return JSON.stringify((raw as { message: string }).message);
  }
  if (typeof raw !== 'string') return JSON.stringify(raw);
  // Quoted only when needed: a value with a space or '=' would read as several fields.
  return /^[^\s"=]+$/u.test(raw) ? raw : JSON.stringify(raw);
}

/** Nested objects as dotted keys (fastify's `req={"method":"GET",...}` reads as req.method=GET); an error as its message. */
function flatten(key: string, raw: unknown): string[] {
  const isObject = raw !== null && typeof raw === 'object' && !Array.isArray(raw);
  if (!isObject || typeof (raw as { message?: unknown }).message === 'string') return [`${key}=${value(raw)}`];
  return Object.entries(raw as Record<string, unknown>).flatMap(([inner, nested]) => (nested === undefined ? [] : flatten(`${key}.${inner}`, nested)));
}

/**
 * One pino JSON line as "HH:MM:SS LEVEL message key=value ...\n", on one line whatever the message
 * holds. The time is local: the reader compares it with the clock on their wall, not with UTC.
 * A line that is not a JSON object is passed through unchanged.
 */
export function formatLogLine(line: string, paint: Paint): string {
  let record: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return line;
    record = parsed as Record<string, unknown>;
  } catch {
    return line; // not pino's: keep it as it came rather than lose it
  }
  const time = new Date(typeof record['time'] === 'number' ? record['time'] : Date.now());
  const [name, style] = LEVELS[Number(record['level'])] ?? [String(record['level'] ?? 'LOG').toUpperCase(), null];
  const fields = Object.entries(record)
    .filter(([key, raw]) => !OMITTED.has(key) && raw !== undefined)
    .flatMap(([key, raw]) => flatten(key, raw));
  const message = typeof record['msg'] === 'string' ? record['msg'] : '';
  const text = sanitizeLine([message, ...fields].filter((part) => part !== '').join(' '));
  const stamp = `${two(time.getHours())}:${two(time.getMinutes())}:${two(time.getSeconds())}`;
  return `${paint('dim', stamp)} ${style === null ? name : paint(style, name)} ${text}\n`;
}

/** The daemon's logger: STRATA_LOG_LEVEL=debug adds a line per captured version. */
export async function daemonLogger(format: LogFormat): Promise<Logger> {
  const { default: pino } = await import('pino');
  return pino({ level: process.env['STRATA_LOG_LEVEL'] ?? 'info' }, await logDestination(format));
}

/** The --log-format option, for each command that runs a service in the foreground. */
export function logFormatOption(): Option {
  return new Option('--log-format <format>', 'log lines on stderr: pretty (default on a terminal) or json (default otherwise)').choices(LOG_FORMATS);
}
