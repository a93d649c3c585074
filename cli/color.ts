// Colour for people at a terminal, nothing else: only when the stream is a TTY, never under --json,
// and never when NO_COLOR is set to anything non-empty (https://no-color.org). Plain ANSI SGR
// codes; the few styles below are all the CLI uses, so no colour library is needed.

const STYLES = {
  bold: ['\x1b[1m', '\x1b[22m'],
  dim: ['\x1b[2m', '\x1b[22m'],
  red: ['\x1b[31m', '\x1b[39m'],
  yellow: ['\x1b[33m', '\x1b[39m'],
  cyan: ['\x1b[36m', '\x1b[39m'],
} as const;

export type Style = keyof typeof STYLES;
export type Paint = (style: Style, text: string) => string;

/** Whether `stream` gets colour. `env` is passed in so that a test can decide it. */
export function colorEnabled(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  const noColor = env['NO_COLOR'];
  return stream.isTTY === true && (noColor === undefined || noColor === '');
}

/** A painter for one stream: the identity when that stream gets no colour. */
export function painter(enabled: boolean): Paint {
  if (!enabled) return (_style, text) => text;
  return (style, text) => (text === '' ? text : `${STYLES[style][0]}${text}${STYLES[style][1]}`);
}
