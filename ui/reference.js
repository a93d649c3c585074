// The API reference, rendered from the server's own /openapi.json (built from the registered routes:
// control-api/openapi.ts), so the page cannot drift from what is served. docs/api.md is checked
// against the same document by test/api-docs.test.ts.
import { h } from './dom.js';

const main = document.getElementById('main');

function parameters(operation) {
  const items = (operation.parameters ?? []).map((p) => h('li', {}, h('code', {}, p.name), ` (${p.in}${p.required ? ', required' : ''})${p.description ? `: ${p.description}` : ''}`));
  const body = operation.requestBody?.content;
  if (body !== undefined) items.push(h('li', {}, `body: ${Object.keys(body).join(', ')}`));
  return items.length === 0 ? '' : h('ul', {}, ...items);
}

async function render() {
  const doc = await (await fetch('/openapi.json')).json();
  const byTag = new Map();
  for (const [path, methods] of Object.entries(doc.paths ?? {})) {
    for (const [method, operation] of Object.entries(methods)) {
      const tag = operation.tags?.[0] ?? 'other';
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push({ method: method.toUpperCase(), path, operation });
    }
  }
  const sections = [...byTag.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([tag, routes]) =>
    h(
      'section',
      { id: `tag-${tag}` },
      h('h2', {}, tag),
      ...routes.map(({ method, path, operation }) =>
        h('article', { class: 'route' }, h('h3', {}, h('code', {}, `${method} ${path}`)), h('p', {}, operation.summary ?? ''), parameters(operation), h('p', { class: 'summary' }, `responses: ${Object.keys(operation.responses ?? {}).join(', ')}`)),
      ),
    ),
  );
  const count = [...byTag.values()].reduce((n, routes) => n + routes.length, 0);
  main.replaceChildren(h('h1', {}, `${doc.info?.title ?? 'API'} ${doc.info?.version ?? ''}`), h('p', {}, `${count} routes, from `, h('a', { href: '/openapi.json' }, '/openapi.json'), '.'), h('nav', { class: 'tabs', 'aria-label': 'Groups' }, ...[...byTag.keys()].sort().map((tag) => h('a', { href: `#tag-${tag}` }, tag))), ...sections);
}

render().catch((error) => main.replaceChildren(h('p', { role: 'alert' }, `Could not load /openapi.json: ${error}`)));
