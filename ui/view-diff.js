// Two versions of a file side by side: the server compares them (GET …/history/diff, engine
// diff/line-diff.ts) and sends the changed lines with context; this colours them (highlight.js),
// the first screens at once and the rest a slice per frame.
import { ApiError, api, query } from './api.js';
import { formatBytes, formatTime, h } from './dom.js';
import { languageOf, renderLine } from './highlight.js';
import { link, projectCrumbs, projectPath, show } from './page.js';

const FIRST_ROWS = 60;
const SLICE_ROWS = 500;

export async function diffView(projectPromise, params, id) {
  const path = params.get('path') ?? '';
  const [a, b] = [params.get('a'), params.get('b')];
  const [project, diff] = await Promise.all([projectPromise, api(projectPath(id, `/history/diff${query({ a, b })}`)).catch((error) => error)]);
  projectCrumbs(project, [{ label: path, href: link(id, 'file', { path }) }, { label: 'compare' }]);
  if (diff instanceof ApiError && diff.code === 'DIFF_TOO_LARGE') {
    return show(h('h1', {}, `${path}: compare`), h('p', {}, `${diff.message}: the versions are too large to compare here. Download them from the file's history.`));
  }
  if (diff instanceof Error) throw diff;
  const { a: va, b: vb } = diff;
  const heading = h('h1', {}, `${path}: ${formatTime(va.timestamp)} → ${formatTime(vb.timestamp)}`);
  if (diff.binary) return show(heading, h('p', {}, `Binary content: ${formatBytes(va.size)} → ${formatBytes(vb.size)}. Download either version from the file's history.`));
  const lang = languageOf(path);
  const body = h('tbody', {});
  const rows = diff.rows;
  const rowOf = (row) =>
    row.kind === 'skip'
      ? h('tr', { class: 'skip' }, h('td', { colspan: '4' }, `… ${row.count} unchanged lines …`))
      : h(
          'tr',
          { class: row.kind },
          h('td', { class: 'ln' }, row.left === null ? '' : String(row.left.n)),
          codeCell(row.left, lang, row.kind === 'change' || row.kind === 'delete' ? 'old' : ''),
          h('td', { class: 'ln' }, row.right === null ? '' : String(row.right.n)),
          codeCell(row.right, lang, row.kind === 'change' || row.kind === 'insert' ? 'new' : ''),
        );
  // The first screens at once, the rest a slice per frame, starting a frame after the first screens
  // are painted (so nothing of the rest runs between that paint and the reader's first input): a
  // large diff is readable, and the page usable, long before its last row is laid out.
  for (const row of rows.slice(0, FIRST_ROWS)) body.append(rowOf(row));
  const afterPaint = (fn) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(fn, 0)));
  const appendRest = (from) => {
    if (from >= rows.length || !body.isConnected) return;
    const fragment = document.createDocumentFragment();
    for (const row of rows.slice(from, from + SLICE_ROWS)) fragment.append(rowOf(row));
    body.append(fragment);
    afterPaint(() => appendRest(from + SLICE_ROWS));
  };
  afterPaint(() => appendRest(FIRST_ROWS));
  show(
    heading,
    h(
      'p',
      { class: 'summary' },
      diff.changedLines === 0 ? 'No differences.' : `${diff.changedLines} changed lines; A ${formatBytes(va.size)} by ${va.actor.name}, B ${formatBytes(vb.size)} by ${vb.actor.name}.`,
    ),
    h(
      'table',
      { class: 'diff' },
      h('caption', {}, `A: ${formatTime(va.timestamp)} (left), B: ${formatTime(vb.timestamp)} (right)`),
      h('colgroup', {}, h('col', { class: 'ln' }), h('col', {}), h('col', { class: 'ln' }), h('col', {})),
      body,
    ),
  );
}

function codeCell(line, lang, side) {
  const cell = h('td', { class: `code ${side}` });
  if (line !== null) renderLine(cell, line.text, lang);
  return cell;
}
