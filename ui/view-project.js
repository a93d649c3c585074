// The project views: the project list (with the daemon's capture and sync state), snapshots and what
// each changed, restoring one, and the settings (retention, versioning policy, dataset rules).
import { ApiError, api, query } from './api.js';
import { confirmDialog, formatBytes, formatTime, h } from './dom.js';
import { link, projectCrumbs, projectNav, projectPath, setCrumbs, show, showError, table } from './page.js';

export async function projectsView() {
  setCrumbs([{ label: 'Projects' }]);
  const [{ items }, status] = await Promise.all([api('/v1/projects'), api('/v1/daemon/status').catch(() => null)]);
  const local = new Map((status?.projects ?? []).map((p) => [p.projectId, p]));
  if (items.length === 0) return show(h('h1', {}, 'Projects'), h('p', {}, 'No projects yet: ', h('code', {}, 'strata init DIR'), ' starts one.'));
  const rows = items.map((project) => {
    const here = local.get(project.projectId);
    const sync = here?.sync;
    const guard = sync?.held ? `holding ${sync.held.deletes} deletions: strata sync confirm` : '';
    // The daemon's verdict and its first reason (daemon/sync/sync-verdict.ts), as `strata sync status` says it.
    const syncText = sync ? (sync.inSync ? 'in sync' : `not in sync: ${sync.reasons?.[0]?.message ?? sync.state}`) : 'not linked';
    return h(
      'tr',
      {},
      h('td', {}, h('a', { href: link(project.projectId, 'tree') }, project.name)),
      h('td', {}, here ? `${here.mode}, ${here.state}` : '—'),
      h('td', {}, here?.dir ?? ''),
      h('td', {}, syncText),
      h('td', {}, guard || (sync ? 'no deletions held' : '')),
    );
  });
  show(h('h1', {}, 'Projects'), table(['Project', 'Capture', 'Directory', 'Sync', 'Delete guard'], rows));
}

export async function snapshotsView(projectPromise) {
  const project = await projectPromise;
  const id = project.projectId;
  projectCrumbs(project, [{ label: 'snapshots' }]);
  const { items } = await api(projectPath(id, `/fs/snapshots${query({ limit: 100 })}`));
  const rows = items.map((snapshot, i) => {
    const older = items[i + 1];
    const restore = h('button', { type: 'button' }, 'Restore');
    restore.addEventListener('click', () => restoreSnapshot(project, snapshot).catch(showError));
    return h(
      'tr',
      {},
      h('td', { class: 'num' }, String(snapshot.seq)),
      h('td', {}, formatTime(snapshot.timestamp)),
      h('td', {}, snapshot.tags.join(', ')),
      h('td', {}, snapshot.message),
      h('td', { class: 'num' }, `${snapshot.fileCount} files, ${formatBytes(snapshot.totalSize)}`),
      h(
        'td',
        { class: 'actions' },
        h('a', { href: link(id, 'tree', { snap: snapshot.snapshotId }) }, 'Files'),
        ' ',
        older ? h('a', { href: link(id, 'snapdiff', { from: older.snapshotId, to: snapshot.snapshotId }) }, 'Changes') : '',
        ' ',
        h('a', { href: link(id, 'snapdiff', { from: snapshot.snapshotId }) }, 'Since'),
        ' ',
        restore,
      ),
    );
  });
  show(h('h1', {}, 'Snapshots'), projectNav(project, 'snapshots'), rows.length === 0 ? h('p', {}, 'No snapshots yet: strata snapshot create -m MESSAGE') : table(['#', 'When', 'Tags', 'Message', 'Size', ''], rows));
}

async function snapshotDiff(projectId, from, to) {
  return api(projectPath(projectId, `/fs/snapshots/${encodeURIComponent(from)}/diff${query({ to })}`));
}

export async function snapshotDiffView(projectPromise, params) {
  const project = await projectPromise;
  const from = params.get('from');
  const to = params.get('to') || undefined;
  projectCrumbs(project, [{ label: 'snapshots', href: link(project.projectId, 'snapshots') }, { label: 'changes' }]);
  const diff = await snapshotDiff(project.projectId, from, to);
  const rows = diff.items.map((item) =>
    h(
      'tr',
      { class: item.change },
      h('td', {}, item.change),
      h('td', {}, h('a', { href: link(project.projectId, 'file', { path: item.path }) }, item.path)),
      h('td', { class: 'num' }, item.before ? formatBytes(item.before.size) : '—'),
      h('td', { class: 'num' }, item.after ? formatBytes(item.after.size) : '—'),
      h('td', {}, item.before && item.after && !item.before.dataset && !item.after.dataset ? h('a', { href: link(project.projectId, 'diff', { path: item.path, a: item.before.versionId, b: item.after.versionId }) }, 'compare') : ''),
    ),
  );
  show(h('h1', {}, to ? 'Changes between two snapshots' : 'Changes since the snapshot'), projectNav(project, 'snapshots'), rows.length === 0 ? h('p', {}, 'No changes.') : table(['Change', 'Path', 'Before', 'After', ''], rows));
}

async function restoreSnapshot(project, snapshot) {
  // What will change: the current files against the snapshot (restoring makes them its files again).
  const diff = await snapshotDiff(project.projectId, snapshot.snapshotId);
  const count = (change) => diff.items.filter((item) => item.change === change).length;
  const lines = diff.items.length === 0
    ? ['The files are already as this snapshot has them: nothing will change.']
    : [
        `${count('modified')} files get the content the snapshot has, ${count('added')} files made since are removed, ${count('removed')} files removed since come back.`,
        ...diff.items.slice(0, 8).map((item) => `${item.change === 'added' ? 'remove' : item.change === 'removed' ? 'bring back' : 'change'}: ${item.path}`),
        diff.items.length > 8 ? `… and ${diff.items.length - 8} more` : '',
        'Each is recorded as a new version: nothing in any history is lost.',
      ].filter(Boolean);
  const ok = await confirmDialog(`Restore snapshot ${snapshot.seq}?`, lines, 'Restore the snapshot');
  if (!ok) return;
  await api(projectPath(project.projectId, `/fs/snapshots/${encodeURIComponent(snapshot.snapshotId)}/restore`), { method: 'POST' });
  location.hash = link(project.projectId, 'tree');
}

export async function settingsView(projectPromise) {
  const project = await projectPromise;
  const id = project.projectId;
  projectCrumbs(project, [{ label: 'settings' }]);
  const [retention, policy, datasets] = await Promise.all([api(projectPath(id, '/fs/retention')), api(projectPath(id, '/policy')), api(projectPath(id, '/fs/datasets'))]);
  const input = h('input', { id: 'max-versions', type: 'number', min: '0', value: String(retention.maxVersions), inputmode: 'numeric' });
  const save = h('button', { type: 'submit' }, 'Save');
  const note = h('p', { role: 'status' });
  const form = h('form', {}, h('label', { for: 'max-versions' }, 'Versions kept per file (0 keeps all): '), input, ' ', save, note);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const maxVersions = Number(input.value);
      // Asked first: a setting that prunes says what it will delete before it does.
      const preview = await api(projectPath(id, '/fs/retention'), { method: 'POST', body: { maxVersions, dryRun: true } });
      if (preview.pruned.versions > 0) {
        const paths = (preview.pruned.paths ?? []).slice(0, 6).map((p) => `${p.path}: ${p.versions} versions, ${formatBytes(p.bytes)}`);
        const ok = await confirmDialog(`Keep ${maxVersions} versions per file?`, [`This prunes ${preview.pruned.versions} older versions (${formatBytes(preview.pruned.bytes)}) now. Versions pinned by a snapshot stay.`, ...paths], 'Prune them');
        if (!ok) return;
      }
      const next = await api(projectPath(id, '/fs/retention'), { method: 'POST', body: { maxVersions } });
      note.textContent = `Saved: ${next.maxVersions === 0 ? 'every version is kept' : `${next.maxVersions} versions per file are kept`}${next.pruned?.versions ? `; ${next.pruned.versions} older versions pruned` : ''}.`;
    } catch (error) {
      note.textContent = error instanceof ApiError ? `${error.code}: ${error.message}` : String(error);
    }
  });
  show(
    h('h1', {}, 'Settings'),
    projectNav(project, 'settings'),
    h('h2', {}, 'Retention'),
    form,
    h('p', {}, 'Versions pinned by a snapshot are never pruned.'),
    h('h2', {}, 'Versioning policy'),
    policyForm(id, policy),
    h('h2', {}, 'Datasets'),
    h('dl', {}, h('dt', {}, 'Files above this are datasets'), h('dd', {}, formatBytes(datasets.thresholdBytes ?? datasets.rules?.thresholdBytes ?? 0)), h('dt', {}, 'Tracked patterns'), h('dd', {}, (datasets.tracked ?? datasets.rules?.tracked ?? []).join(' ') || '—')),
  );
}

/** Extensions always versioned; above a size, files keep their history only if allowlisted. */
function policyForm(projectId, policy) {
  const always = h('input', { id: 'always', value: policy.alwaysExtensions.join(' '), size: '40' });
  const threshold = h('input', { id: 'threshold', type: 'number', min: '0', value: String(Math.round(policy.sizeThreshold / 1e6)), inputmode: 'numeric' });
  const allow = h('input', { id: 'allow', value: policy.largeFileAllowlist.join(' '), size: '40' });
  const note = h('p', { role: 'status' });
  const words = (input) => input.value.split(/[\s,]+/).filter(Boolean);
  const form = h(
    'form',
    { class: 'policy' },
    h('p', {}, h('label', { for: 'always' }, 'Always versioned (extensions): '), always),
    h('p', {}, h('label', { for: 'threshold' }, 'Above this size (MB), a file keeps one version: '), threshold),
    h('p', {}, h('label', { for: 'allow' }, '…unless its extension is one of: '), allow),
    h('button', { type: 'submit' }, 'Save policy'),
    note,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const body = { alwaysExtensions: words(always), sizeThreshold: Math.round(Number(threshold.value) * 1e6), largeFileAllowlist: words(allow) };
      await api(projectPath(projectId, '/policy'), { method: 'PUT', body });
      note.textContent = 'Saved: new writes follow it.';
    } catch (error) {
      note.textContent = error instanceof ApiError ? `${error.code}: ${error.message}` : String(error);
    }
  });
  return form;
}
