// DOM building blocks for the dashboard: h/s element builders and the table, card, badge and metric helpers.
// Every string reaches the page through textContent or setAttribute, never innerHTML.

export function h(tag, attrs, ...kids) {
  return fill(document.createElement(tag), attrs, kids);
}

export function s(tag, attrs, ...kids) {
  return fill(document.createElementNS('http://www.w3.org/2000/svg', tag), attrs, kids);
}

function fill(node, attrs, kids) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  node.append(...kids.flat().filter((k) => k !== null && k !== undefined && k !== false));
  return node;
}

export const metric = (name, text, cls) => h('span', { 'data-metric': name, class: cls }, text);
export const numCell = (name, text, ...extra) => h('td', { class: 'num', 'data-metric': name }, text, ...extra);
export const badge = (text, title, name) => h('span', { class: `badge ${text}`, title, 'data-metric': name }, text);
export const backendHref = (name) => `#/backend/${encodeURIComponent(name)}`;

export function shareBar(ratio) {
  const bar = h('span', { class: 'bar' }, h('span'));
  bar.firstChild.style.width = `${Math.max(0, Math.min(1, ratio || 0)) * 100}%`;
  return bar;
}

export function table(heads, rows, empty) {
  if (!rows.length) return h('p', { class: 'empty' }, empty);
  const th = heads.map((t) => h('th', { class: t.startsWith(' ') ? 'num' : null }, t.trim()));
  return h('div', { class: 'table-wrap' }, h('table', {}, h('thead', {}, h('tr', {}, th)), h('tbody', {}, rows)));
}

export function card(title, note, ...body) {
  const head = h('header', { class: 'card-head' }, h('h2', {}, title), note && h('span', { class: 'note' }, note));
  return h('section', { class: 'card' }, head, ...body);
}
