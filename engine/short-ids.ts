// Short forms of version and snapshot ids (issue 18): what a person types instead of a 36-character
// UUID. Pure parsing; the lookups are in commands/resolve-ids.ts.
//
// A UUIDv7 begins with its 48-bit millisecond timestamp, so ids made close together share their first
// digits: the web UI and the CLI tables therefore show an id as its LAST 10 hex digits (random bits;
// ui/dom.js shortId). Both ends are accepted, as git accepts an abbreviated hash:
// - a prefix of the hex digits (dashes optional), and
// - an ending of the hex digits, the form the UI and the tables print.
// Both need at least MIN_ABBREVIATION digits. Six hex digits of the timestamp are a 4.6-hour window,
// so a shorter prefix is almost never unique — and it would make the repository walk every id of that
// window (of every project on a team server) to find a handful of this project's.

import { isUuid } from './ids.js';

export const MIN_ABBREVIATION = 6;
/** The digits the UI and the CLI tables show. */
export const SHORT_ID_DIGITS = 10;

/** An abbreviation as the canonical (dashed, lowercase) text's prefix or ending: what the repository matches. */
export type IdAbbreviation = { prefix: string } | { suffix: string };

export interface IdReference {
  /** the canonical id, when the text is a whole id (with or without dashes, any case) */
  full: string | null;
  /** the ways the text can abbreviate an id (none when it has fewer than 6 hex digits) */
  abbreviations: IdAbbreviation[];
  /** the text as a snapshot's number (`strata snapshot restore 12`): digits without a leading zero */
  seq: number | null;
}

// Dashes sit after hex digits 8, 12, 16 and 20 of 32 (8-4-4-4-12).
const DASH_AFTER = [8, 12, 16, 20];
const HEX_DIGITS = 32;

export function parseIdReference(text: string): IdReference {
  const seq = /^[1-9][0-9]{0,14}$/.test(text) ? Number(text) : null;
  const lower = text.toLowerCase();
  if (isUuid(lower)) return { full: lower, abbreviations: [], seq };
  const hex = lower.replace(/-/g, '');
  if (!/^[0-9a-f]+$/.test(hex) || hex.length > HEX_DIGITS || lower.startsWith('-') || lower.endsWith('-') || lower.includes('--')) {
    return { full: null, abbreviations: [], seq };
  }
  if (hex.length === HEX_DIGITS) return { full: dashed(hex, 0), abbreviations: [], seq };
  if (hex.length < MIN_ABBREVIATION) return { full: null, abbreviations: [], seq };
  return { full: null, abbreviations: [{ prefix: dashed(hex, 0) }, { suffix: dashed(hex, HEX_DIGITS - hex.length) }], seq };
}

/** `hex` placed at digit `offset` of an id, with the dashes that fall between its digits. */
function dashed(hex: string, offset: number): string {
  let out = '';
  for (let i = 0; i < hex.length; i += 1) {
    if (i > 0 && DASH_AFTER.includes(offset + i)) out += '-';
    out += hex[i];
  }
  return out;
}

/** The last 10 hex digits: how people see an id in tables (the same as the web UI's). */
export function shortId(id: string): string {
  return id.replace(/-/g, '').slice(-SHORT_ID_DIGITS);
}
