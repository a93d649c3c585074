// What every view of the history browser shares: the page's two regions, links between views, the
// project's API paths, errors said in words, and tables.
import { ApiError, query } from './api.js';
import { h } from './dom.js';

export const PAGE = 100;
const main = document.getElementById('main');
const crumbs = document.getElementById('crumbs');

export const link = (projectId, view, params = {}) => `#/p/${encodeURIComponent(projectId)}${view === 'tree' ? '' : `/${view}`}${query(params)}`;
export const projectPath = (projectId, suffix) => `/v1/projects/${encodeURIComponent(projectId)}${suffix}`;

export function setCrumbs(items) {
  crumbs.replaceChildren(...items.flatMap((item, i) => [i > 0 ? h('span', { class: 'sep', 'aria-hidden': 'true' }, '/') : '', item.href ? h('a', { href: item.href }, item.label) : h('span', {}, item.label)]));
}

export function show(...children) {
  main.replaceChildren(...children);
  main.focus({ preventScroll: true });
}

let renderer = async () => {};

/** The router's render (app.js): views call it after a change to show its result. */
export function setRenderer(fn) {
  renderer = fn;
}

export function rerender() {
  return renderer();
}

export function showError(error) {
  if (error instanceof ApiError && error.status === 401) {
    setCrumbs([]);
    show(h('section', { class: 'notice' }, h('h1', {}, 'Sign in from the terminal'), h('p', {}, 'Run ', h('code', {}, 'strata ui'), ' to open this page signed in. Its link works once, for a minute.')));
    return;
  }
  show(h('section', { class: 'notice error', role: 'alert' }, h('h1', {}, 'Something went wrong'), h('p', {}, error instanceof ApiError ? `${error.code}: ${error.message}` : String(error))));
}

export function projectCrumbs(project, extra = []) {
  setCrumbs([{ label: 'Projects', href: '#/' }, { label: project.name, href: link(project.projectId, 'tree') }, ...extra]);
}

export function projectNav(project, current) {
  const items = [
    ['tree', 'Files'],
    ['snapshots', 'Snapshots'],
    ['settings', 'Settings'],
  ];
  return h('nav', { class: 'tabs', 'aria-label': 'Project' }, ...items.map(([view, label]) => h('a', { href: link(project.projectId, view), 'aria-current': view === current ? 'page' : 'false' }, label)));
}

export function table(headings, rows) {
  return h('table', {}, h('thead', {}, h('tr', {}, ...headings.map((t) => h('th', { scope: 'col' }, t)))), h('tbody', {}, ...rows));
}
