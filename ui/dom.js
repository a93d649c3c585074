// Building the page from data safely: h() makes elements whose text is always text (never parsed as
// HTML), and the few formatting helpers every view shares.

export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === undefined || value === null) continue;
    if (value === true) element.setAttribute(name, '');
    else element.setAttribute(name, value);
  }
  for (const child of children.flat()) {
    if (child === '' || child === null || child === undefined) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB'];

export function formatBytes(n) {
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${UNITS[unit]}`;
}

// One formatter for the page: toLocaleString builds a new one per call (70 ms for 100 rows).
const TIME = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

export function formatTime(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : TIME.format(date);
}

/** The start of an id, as git abbreviates hashes (the CLI takes any unique prefix). */
export function shortId(id) {
  return id.replace(/-/g, '').slice(-10);
}

/** A modal question; resolves true when the person confirms. Escape and Cancel say no. */
export function confirmDialog(title, lines, okLabel) {
  const dialog = document.getElementById('confirm');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-body').replaceChildren(...lines.map((line) => h('p', {}, line)));
  document.getElementById('confirm-ok').textContent = okLabel;
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true });
    dialog.returnValue = '';
    dialog.showModal();
  });
}
