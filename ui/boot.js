// Starts the first view's API requests while the page's modules are still loading (on a fresh load
// they take ~80 ms to arrive): the views then take these responses instead of asking again
// (api.js). A classic script, run before the modules. The URLs must be built exactly as the views
// build them (page.js projectPath, api.js query, view-files.js, view-diff.js); a URL that differs
// is simply fetched again.
(() => {
  const match = /^#\/p\/([^/?]+)(?:\/([a-z]+))?(?:\?(.*))?$/.exec(location.hash);
  if (match === null) return;
  const base = `/v1/projects/${match[1]}`;
  const view = match[2] ?? 'tree';
  const params = new URLSearchParams(match[3] ?? '');
  const query = (values) => {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(values)) if (value) search.set(key, value);
    const text = search.toString();
    return text === '' ? '' : `?${text}`;
  };
  const urls = [base];
  if (view === 'file') urls.push(`${base}/history${query({ path: params.get('path'), limit: '100' })}`);
  const a = params.get('a');
  const b = params.get('b');
  if (view === 'diff' && a && b) urls.push(`${base}/history/diff${query({ a, b })}`);
  const headers = { 'x-strata-ui-proof': localStorage.getItem('strata-ui-proof') ?? '' };
  const started = new Map();
  for (const url of urls) started.set(url, fetch(url, { headers, credentials: 'same-origin' }));
  window.strataPrefetched = started;
})();
