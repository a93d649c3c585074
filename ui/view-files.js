// The file views: the tree (now, at a snapshot, at a moment), a file's history with download and
// restore, and a dataset's versions.
import { api, bytes, query } from './api.js';
import { confirmDialog, formatBytes, formatTime, h, shortId } from './dom.js';
import { link, PAGE, projectCrumbs, projectNav, projectPath, rerender, show, showError, table } from './page.js';

export async function treeView(projectPromise, params) {
  const project = await projectPromise;
  const dir = params.get('path') ?? '';
  const snap = params.get('snap') ?? '';
  const at = params.get('at') ?? '';
  const id = project.projectId;
  const current = () => api(projectPath(id, `/fs/dir${query({ path: dir, at })}`)).then((listing) => listing.items);
  const [listing, snapshots] = await Promise.all([snap === '' ? current() : snapshotListing(id, snap, dir), api(projectPath(id, `/fs/snapshots${query({ limit: 100 })}`))]);
  const dirCrumbs = [];
  let sofar = '';
  for (const part of dir === '' ? [] : dir.split('/')) {
    sofar = sofar === '' ? part : `${sofar}/${part}`;
    dirCrumbs.push({ label: part, href: link(id, 'tree', { path: sofar, snap, at }) });
  }
  projectCrumbs(project, dirCrumbs);
  const picker = h(
    'select',
    { id: 'at', 'aria-label': 'Show the files as of' },
    h('option', { value: '' }, 'now'),
    ...snapshots.items.map((s) => h('option', { value: s.snapshotId, selected: s.snapshotId === snap }, `snapshot ${s.seq}${s.tags.length ? ` (${s.tags.join(', ')})` : ''} — ${formatTime(s.timestamp)}`)),
  );
  picker.addEventListener('change', () => {
    location.hash = link(id, 'tree', { path: dir, snap: picker.value });
  });
  // Any moment, to the minute, in the browser's time zone; the API takes it as UTC.
  const moment = h('input', { id: 'moment', type: 'datetime-local', value: at === '' ? '' : localInputValue(at) });
  moment.addEventListener('change', () => {
    location.hash = link(id, 'tree', { path: dir, at: moment.value === '' ? '' : new Date(moment.value).toISOString() });
  });
  const rows = listing.map((item) =>
    h(
      'tr',
      {},
      h('td', {}, item.type === 'directory' ? h('a', { href: link(id, 'tree', { path: item.path, snap, at }) }, `${item.name}/`) : h('a', { href: link(id, 'file', { path: item.path }) }, item.name)),
      h('td', { class: 'num' }, item.type === 'file' ? formatBytes(item.size ?? 0) : ''),
      h('td', {}, item.timestamp ? formatTime(item.timestamp) : ''),
      h('td', {}, item.symlink ? 'link' : item.dataset ? 'dataset' : ''),
    ),
  );
  show(
    h('h1', {}, dir === '' ? project.name : dir),
    projectNav(project, 'tree'),
    h('p', { class: 'asof' }, h('label', { for: 'at' }, 'As of '), picker, ' ', h('label', { for: 'moment' }, 'or at '), moment),
    at === '' ? '' : h('p', { class: 'summary' }, `The files as they were at ${formatTime(at)}.`),
    rows.length === 0 ? h('p', {}, 'No files here.') : table(['Name', 'Size', 'Changed', ''], rows),
  );
}

/** An ISO time as a datetime-local input's value (local time, to the minute). */
function localInputValue(iso) {
  const date = new Date(iso);
  const pad = (n) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** The direct children of `dir` in a snapshot (its entries below the prefix, folded into folders). */
async function snapshotListing(projectId, snapshotId, dir) {
  const prefix = dir === '' ? '' : `${dir}/`;
  const children = new Map();
  let cursor;
  do {
    const page = await api(projectPath(projectId, `/fs/snapshots/${encodeURIComponent(snapshotId)}/entries${query({ prefix, cursor, limit: 1000 })}`));
    for (const entry of page.items) {
      const rest = entry.path.slice(prefix.length);
      const slash = rest.indexOf('/');
      const name = slash === -1 ? rest : rest.slice(0, slash);
      if (slash === -1) children.set(name, { name, path: entry.path, type: 'file', size: entry.size, symlink: entry.symlink, dataset: entry.dataset });
      else if (!children.has(name)) children.set(name, { name, path: `${prefix}${name}`, type: 'directory' });
    }
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return [...children.values()].sort((a, b) => (a.type === b.type ? (a.name < b.name ? -1 : 1) : a.type === 'directory' ? -1 : 1));
}

export async function fileView(projectPromise, params, id) {
  const path = params.get('path') ?? '';
  const versions = [];
  let cursor;
  const list = h('tbody', {});
  const more = h('button', { type: 'button' }, 'Show older versions');
  const chosen = { a: null, b: null };
  const compare = h('a', { class: 'button', 'aria-disabled': 'true' }, 'Compare the two chosen versions');
  const updateCompare = () => {
    if (chosen.a && chosen.b) {
      compare.setAttribute('href', link(id, 'diff', { path, a: chosen.a, b: chosen.b }));
      compare.setAttribute('aria-disabled', 'false');
    } else {
      compare.removeAttribute('href');
      compare.setAttribute('aria-disabled', 'true');
    }
  };
  const load = async () => {
    const page = await api(projectPath(id, `/history${query({ path, cursor, limit: PAGE })}`));
    cursor = page.nextCursor;
    more.hidden = cursor === undefined;
    for (const version of page.items) {
      const index = versions.push(version) - 1;
      list.append(versionRow({ projectId: id }, version, index, versions, chosen, updateCompare));
    }
  };
  more.addEventListener('click', () => load().catch(showError));
  const [project] = await Promise.all([projectPromise, load()]);
  projectCrumbs(project, [{ label: path }]);
  if (versions.length === 0) return show(h('h1', {}, path), h('p', {}, 'This path has no history.'));
  // Newest two chosen by default: the usual question is "what did the last change do".
  for (const radio of list.querySelectorAll('input[type=radio]')) {
    if (radio.disabled || !((radio.name === 'a' && radio.dataset.index === '1') || (radio.name === 'b' && radio.dataset.index === '0'))) continue;
    radio.checked = true;
    chosen[radio.name] = radio.value;
  }
  updateCompare();
  const current = versions[0];
  show(
    h('h1', {}, path),
    projectNav(project, 'tree'),
    h(
      'p',
      { class: 'summary' },
      `${versions.length}${cursor ? '+' : ''} versions; now ${current.contentHash === null ? 'deleted' : formatBytes(current.size)}, last changed ${formatTime(current.timestamp)} by ${current.actor.name}`,
      current.dataset ? [' — ', h('a', { href: link(id, 'dataset', { path }) }, 'dataset shard history')] : '',
    ),
    h('p', {}, compare),
    h('table', { class: 'timeline' }, h('caption', {}, 'Versions, newest first. Choose A (older) and B (newer) to compare.'), h('thead', {}, h('tr', {}, ...['A', 'B', 'When', 'Who', 'What', 'Size', 'Version', ''].map((t) => h('th', { scope: 'col' }, t)))), list),
    more,
  );
}

function versionRow(project, version, index, versions, chosen, changed) {
  const older = versions[index + 1];
  const delta = older && version.contentHash !== null && older.contentHash !== null ? version.size - older.size : null;
  const pick = (name) => {
    const radio = h('input', { type: 'radio', name, value: version.versionId, 'aria-label': `${name === 'a' ? 'A' : 'B'}: version of ${formatTime(version.timestamp)}`, 'data-index': String(index) });
    radio.disabled = version.contentHash === null;
    radio.addEventListener('change', () => {
      chosen[name] = version.versionId;
      changed();
    });
    return radio;
  };
  const actions = h('td', { class: 'actions' });
  if (version.contentHash !== null) {
    const download = h('button', { type: 'button' }, 'Download');
    download.addEventListener('click', () => downloadVersion(project, version).catch(showError));
    actions.append(download);
    if (index > 0) {
      const restore = h('button', { type: 'button' }, 'Restore');
      restore.addEventListener('click', () => restoreVersion(project, version, versions[0]).catch(showError));
      actions.append(' ', restore);
    }
  }
  return h(
    'tr',
    {},
    h('td', {}, pick('a')),
    h('td', {}, pick('b')),
    h('td', {}, h('time', { datetime: version.timestamp }, formatTime(version.timestamp))),
    h('td', {}, version.actor.name),
    h('td', {}, version.kind),
    h('td', { class: 'num' }, version.contentHash === null ? '—' : formatBytes(version.size), delta === null || delta === 0 ? '' : h('span', { class: delta > 0 ? 'grew' : 'shrank' }, ` ${delta > 0 ? '+' : '−'}${formatBytes(Math.abs(delta))}`)),
    h('td', {}, h('code', { title: version.versionId }, shortId(version.versionId))),
    actions,
  );
}

async function downloadVersion(project, version) {
  const data = await bytes(projectPath(project.projectId, `/fs/read${query({ versionId: version.versionId })}`));
  const url = URL.createObjectURL(new Blob([data]));
  const anchor = h('a', { href: url, download: version.path.split('/').pop() });
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

async function restoreVersion(project, version, current) {
  const now = current.contentHash === null ? 'is deleted now' : `is ${formatBytes(current.size)} now (changed ${formatTime(current.timestamp)} by ${current.actor.name})`;
  const ok = await confirmDialog(
    `Restore ${version.path}?`,
    [`${version.path} ${now}.`, `It will get the content of ${formatTime(version.timestamp)} (${formatBytes(version.size)}), as a new version: nothing in its history is lost.`],
    'Restore this version',
  );
  if (!ok) return;
  await api(projectPath(project.projectId, '/history/restore'), { method: 'POST', body: { versionId: version.versionId } });
  await rerender();
}

export async function datasetView(projectPromise, params) {
  const project = await projectPromise;
  const path = params.get('path') ?? '';
  projectCrumbs(project, [{ label: path, href: link(project.projectId, 'file', { path }) }, { label: 'dataset' }]);
  const { items } = await api(projectPath(project.projectId, `/fs/dataset/history${query({ path, limit: PAGE })}`));
  const rows = items.map((item) =>
    h(
      'tr',
      {},
      h('td', {}, formatTime(item.version.timestamp)),
      h('td', {}, item.version.actor.name),
      h('td', { class: 'num' }, formatBytes(item.version.size)),
      h('td', { class: 'num' }, item.shardCount === null ? '—' : String(item.shardCount)),
      h('td', { class: 'num' }, item.newShards === null ? '—' : String(item.newShards)),
      h('td', { class: 'num' }, item.newBytes === null || item.newBytes === undefined ? '—' : formatBytes(item.newBytes)),
    ),
  );
  show(
    h('h1', {}, `${path}: dataset`),
    projectNav(project, 'tree'),
    h('p', {}, 'Each version is a list of shards; a version stores only the shards the one before it did not have.'),
    table(['When', 'Who', 'Size', 'Shards', 'New shards', 'Added'], rows),
  );
}
