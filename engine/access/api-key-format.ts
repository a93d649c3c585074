// The API key wire format `rk.<environment>.<keyId>.<secret>` and the stored form of its secret.
// Only HMAC-SHA256(pepper, secret) is stored: a stolen database without the pepper yields nothing a
// client could present, and the pepper lives outside the database.

import { createHmac, type KeyObject, timingSafeEqual } from 'node:crypto';
import type { IdGenerator } from '../ports/world.js';

export const ENVIRONMENT_RE = /^[a-z0-9]{1,16}$/;
const KEY_ID_BYTES = 8;
const SECRET_BYTES = 32;
// 8 bytes hex = 16 chars; 32 bytes base64url without padding = 43 chars.
const KEY_RE = /^rk\.([a-z0-9]{1,16})\.([0-9a-f]{16})\.([A-Za-z0-9_-]{43})$/;
/** longer than any valid key; checked before the regex so a huge header costs nothing */
const MAX_KEY_LENGTH = 3 + 16 + 1 + 16 + 1 + 43;

export interface ParsedApiKey {
  environment: string;
  keyId: string;
  secret: string;
}

/** Strict parse; null for anything that is not exactly a well-formed key. */
export function parseApiKey(value: string): ParsedApiKey | null {
  if (value.length > MAX_KEY_LENGTH) return null;
  const match = KEY_RE.exec(value);
  if (match === null) return null;
  return { environment: match[1]!, keyId: match[2]!, secret: match[3]! };
}

export function formatApiKey(key: ParsedApiKey): string {
  return `rk.${key.environment}.${key.keyId}.${key.secret}`;
}

export function isValidEnvironment(environment: string): boolean {
  return ENVIRONMENT_RE.test(environment);
}

/** A fresh key id and secret from the injected id generator (crypto-random in production). */
export function generateKeyMaterial(ids: IdGenerator): { keyId: string; secret: string } {
  const keyId = ids.randomHex(KEY_ID_BYTES);
  const secret = Buffer.from(ids.randomHex(SECRET_BYTES), 'hex').toString('base64url');
  return { keyId, secret };
}

export function hmacSecret(pepper: Buffer | KeyObject, secret: string): string {
  return createHmac('sha256', pepper).update(secret, 'utf8').digest('hex');
}

// Compared against when the key id is unknown, so an unknown id costs the same HMAC + compare as a
// known one and response timing does not tell which key ids exist.
const DUMMY_HMAC = Buffer.alloc(32);

/** Constant-time comparison of the HMAC of `secret` with the stored hex digest (or a dummy). */
export function secretMatches(pepper: Buffer | KeyObject, secret: string, storedHex: string | null): boolean {
  const computed = Buffer.from(hmacSecret(pepper, secret), 'hex');
  const stored = storedHex !== null && /^[0-9a-f]{64}$/.test(storedHex) ? Buffer.from(storedHex, 'hex') : null;
  const equal = timingSafeEqual(computed, stored ?? DUMMY_HMAC);
  return equal && stored !== null;
}
