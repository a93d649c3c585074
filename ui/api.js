// Calls to the Strata API from the page: the session cookie rides along by itself; the proof that
// this page holds the session (a value only this origin's storage has) goes in a header, on every call.

const PROOF_KEY = 'strata-ui-proof';

/** The proof arrives once, in the address's fragment; it is kept and wiped from the address bar. */
export function takeProofFromAddress() {
  const match = /^#proof=([A-Za-z0-9_-]+)$/.exec(location.hash);
  if (match === null) return;
  localStorage.setItem(PROOF_KEY, match[1]);
  history.replaceState(null, '', '/ui/#/');
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers(extra = {}) {
  return { 'x-strata-ui-proof': localStorage.getItem(PROOF_KEY) ?? '', ...extra };
}

async function failure(response) {
  let code = `HTTP_${response.status}`;
  let message = response.statusText;
  try {
    const body = await response.json();
    code = body.error?.code ?? code;
    message = body.error?.message ?? message;
  } catch {
    // not JSON
  }
  return new ApiError(response.status, code, message);
}

/** A response boot.js already asked for, taken once (a later call asks again). */
function prefetched(path) {
  const started = globalThis.strataPrefetched;
  const response = started?.get(path);
  if (response !== undefined) started.delete(path);
  return response;
}

export async function api(path, { method = 'GET', body } = {}) {
  const init = { method, headers: headers(body === undefined ? {} : { 'content-type': 'application/json' }), credentials: 'same-origin' };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await ((method === 'GET' ? prefetched(path) : undefined) ?? fetch(path, init));
  if (!response.ok) throw await failure(response);
  return response.status === 204 ? null : response.json();
}

/** A version's bytes. */
export async function bytes(path) {
  const response = await (prefetched(path) ?? fetch(path, { headers: headers(), credentials: 'same-origin' }));
  if (!response.ok) throw await failure(response);
  return new Uint8Array(await response.arrayBuffer());
}

export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}
