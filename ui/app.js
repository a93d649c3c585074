// The history browser: one page, views chosen by the address's fragment, data from the Strata API.
//   #/                          projects (with the daemon's capture and sync state when it is a daemon)
//   #/p/ID?path=DIR&snap=S&at=T the file tree, now, as snapshot S pinned it, or as it was at time T
//   #/p/ID/file?path=P          a file's history: timeline, download, restore, pick two to compare
//   #/p/ID/diff?path=P&a=V&b=W  two versions side by side
//   #/p/ID/snapshots            snapshots, tags, what each changed, restore
//   #/p/ID/snapdiff?from=S&to=T what changed between two snapshots (T empty: the current files)
//   #/p/ID/dataset?path=P       a dataset's versions and what each added
//   #/p/ID/settings             retention, versioning policy, dataset rules
// Every piece of data goes into the page as text nodes (dom.js h()), never as HTML.

import { api, takeProofFromAddress } from './api.js';
import { h } from './dom.js';
import { projectPath, setRenderer, show, showError } from './page.js';
import { diffView } from './view-diff.js';
import { datasetView, fileView, treeView } from './view-files.js';
import { projectsView, settingsView, snapshotDiffView, snapshotsView } from './view-project.js';

function parseRoute() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path, search = ''] = raw.split('?');
  const params = new URLSearchParams(search);
  const parts = path.split('/').filter(Boolean);
  if (parts[0] === 'p' && parts[1] !== undefined) return { view: parts[2] ?? 'tree', projectId: decodeURIComponent(parts[1]), params };
  return { view: 'projects', params };
}

async function render() {
  const route = parseRoute();
  try {
    if (route.view === 'projects') return await projectsView();
    // The project's record is asked for while the view asks for its own data (one round trip, not two).
    const project = api(projectPath(route.projectId, ''));
    project.catch(() => {});
    const views = { tree: treeView, file: fileView, diff: diffView, snapshots: snapshotsView, snapdiff: snapshotDiffView, dataset: datasetView, settings: settingsView };
    const view = views[route.view];
    if (view === undefined) return show(h('p', {}, 'No such page.'));
    await view(project, route.params, route.projectId);
  } catch (error) {
    showError(error);
  }
}

takeProofFromAddress();
setRenderer(render);
window.addEventListener('hashchange', () => render());
render();
