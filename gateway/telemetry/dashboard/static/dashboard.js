// Switchyard's dashboard: fleet and per-backend views of GET /v1/switchyard/dashboard.
// Plain DOM and inline SVG, no framework and no network beyond the gateway itself, so it
// renders air-gapped. Every string from the API reaches the page through textContent or
// setAttribute, never innerHTML.
// Loaded as an ES module (strict, deferred); the helpers live in format.js, dom.js, charts.js
// and panels.js beside it.
import { DASH, clock, fmtDuration, fmtInt, fmtPct } from './format.js';
import { backendHref, badge, h, metric } from './dom.js';
import {
  cacheChart, drawCharts, latencyChart, overheadChart, qualityChart, resetCharts, spendChart, successChart, trafficChart,
} from './charts.js';
import {
  backendsTable, cascadesCard, discoveryCard, errorsCard, healthState, keyBadge, qualityBadge, qualityCard, qualityNote, reasonsCard, refusedCard, tiles,
  worstQuality,
} from './panels.js';

const DATA_URL = '/v1/switchyard/dashboard';
const POLL_MS = 5000;
const KEY_ITEM = 'switchyard.dashboard.key';
const WINDOWS = [900, 3600];

const state = {
  data: null,
  windowS: initialWindow(),
  error: null, // message of the last failed fetch; the last good data stays on screen
  needKey: null, // null, or the message shown above the key form ('' for none)
  seq: 0, // fetch generation: answers to superseded fetches are dropped
  timer: 0,
  drawn: '', // what is on screen, so that an unchanged poll keeps hover and scroll as they are
};

// ---- pages ------------------------------------------------------------------------------

function fleetPage(data) {
  const fleet = data.fleet || {};
  const series = fleet.series || {};
  const backends = data.backends || [];
  return [
    h('div', { class: 'page-head' }, h('h1', {}, 'Fleet'), h('span', { class: 'muted' }, `${backends.length} backends · last ${fmtDuration(data.window_s)}`)),
    tiles(fleet.summary || {}),
    backendsTable(backends),
    h('div', { class: 'grid charts' },
      trafficChart(series, data.bucket_s),
      latencyChart('ttft', 'Time to first token', 'p50 / p90 / p99 per bucket', series, data.bucket_s),
      cacheChart(series, data.bucket_s),
      overheadChart(series, data.bucket_s)),
    h('div', { class: 'grid two' },
      reasonsCard(fleet.reasons, 'the policy that set the chosen backend apart'),
      errorsCard(fleet.summary || {})),
    refusedCard(data.rejected, data.refused),
    (data.cascades || []).length > 0 && cascadesCard(data.cascades),
    (data.discovery || []).length > 0 && discoveryCard(data.discovery),
  ];
}

function backendPage(data, name) {
  const b = (data.backends || []).find((x) => x.name === name);
  if (!b) return [h('p', { class: 'empty' }, `No backend named “${name}” is configured. `, h('a', { href: '#/' }, 'Back to the fleet'))];
  const sum = b.summary || {};
  const series = b.series || {};
  const health = b.health || {};
  const quality = worstQuality(b.quality);
  const bucketS = data.bucket_s;
  return [
    h('div', { class: 'page-head' },
      h('h1', {}, b.name), badge(healthState(b).state, health.reason, 'health'), keyBadge(b.credentials),
      h('span', { class: 'stat', title: quality.title }, 'quality ', qualityBadge(quality)),
      h('span', { class: 'chip' }, b.kind), h('span', { class: 'muted' }, (b.models || []).join(', ')),
      h('span', { class: 'stat' }, metric('in_flight', fmtInt(health.in_flight)), ` / ${fmtInt(health.max_concurrency)} in flight`),
      providerBudget(health),
      h('span', { class: 'stat' }, metric('share', fmtPct(sum.share)), ' of fleet requests')),
    statusNotes(b),
    tiles(sum),
    h('div', { class: 'grid charts' },
      trafficChart(series, bucketS), successChart(series, bucketS),
      latencyChart('ttft', 'Time to first token', 'p50 / p90 / p99 per bucket', series, bucketS),
      latencyChart('tpot', 'Time per output token', 'p50 / p90 / p99 per bucket', series, bucketS),
      cacheChart(series, bucketS), spendChart(series, bucketS),
      qualityChart(b.quality, data.window_s), overheadChart(series, bucketS)),
    h('div', { class: 'grid two' }, errorsCard(sum), reasonsCard(b.reasons, `why the router chose ${b.name}`)),
    qualityCard(b.quality),
  ];
}

// What the provider's rate-limit headers last said, while that reading holds; null without one.
function providerBudget(health) {
  const left = [[health.provider_remaining_requests, 'requests'], [health.provider_remaining_tokens, 'tokens']]
    .filter(([n]) => n !== null && n !== undefined).map(([n, what]) => `${fmtInt(n)} ${what}`);
  if (!left.length) return null;
  const cap = health.effective_max_concurrency;
  const note = cap !== undefined && cap < health.max_concurrency ? ` (takes ${fmtInt(cap)} in flight)` : '';
  return h('span', { class: 'stat', title: `read at ${clock(health.provider_limits_read_at, true)}` }, 'provider: ', metric('provider_remaining', left.join(', ')), ` left${note}`);
}

// Health check and quality state in words, loudest first.
function statusNotes(b) {
  const health = b.health || {};
  const notes = [];
  if (health.healthy === false) notes.push(['bad', 'Health check failing', health.reason]);
  const key = (b.credentials || {}).problem;
  if (key) notes.push(['warn', 'No key', `${key}; its requests go without credentials`]);
  for (const q of b.quality || []) {
    const since = q.ejected_for_s > 0 ? ` (${fmtDuration(q.ejected_for_s)})` : '';
    if (q.state === 'ejected') notes.push(['bad', `${q.model}: ejected for quality${since}`, q.reason]);
    if (q.state === 'probation') notes.push(['warn', `${q.model}: on probation`, q.reason]);
    if (q.state === 'suspect') notes.push(['warn', `${q.model}: suspect (gathering evidence: ${fmtInt((q.evidence || {}).seen)}/${fmtInt((q.evidence || {}).needed)})`, q.reason]);
  }
  if (!notes.length) notes.push(['ok', 'Healthy', `health check: ${health.reason || 'ok'}; ${qualityNote(b)}`]);
  const callout = ([cls, title, text]) => h('div', { class: `callout ${cls}` }, h('strong', {}, title), text ? ` — ${text}` : '');
  return h('div', { class: 'notes' }, notes.map(callout));
}

function keyForm(message) {
  const input = h('input', { type: 'password', id: 'key-input', autocomplete: 'off', required: true, placeholder: 'client key' });
  const submit = (ev) => {
    ev.preventDefault();
    if (!input.value.trim()) return;
    setKey(input.value.trim());
    state.needKey = null;
    refresh();
  };
  return [h('form', { class: 'card keyform', onsubmit: submit },
    h('h2', {}, 'Client key required'),
    h('p', { class: 'muted' }, 'This gateway asks for a client key. It stays in this browser tab '
      + '(sessionStorage) and is sent as a bearer token, never in the URL.'),
    message && h('p', { class: 'callout bad' }, message),
    h('label', { for: 'key-input' }, 'Key'), input, h('button', { type: 'submit' }, 'Open the dashboard'))];
}

// ---- header, banners, footer ------------------------------------------------------------

function renderChrome(r) {
  const data = state.data;
  const tabs = [h('a', { href: '#/', class: r.page === 'fleet' ? 'active' : null }, 'Fleet')];
  for (const b of (data && data.backends) || []) {
    const dot = h('i', { class: `dot ${healthState(b).state === 'healthy' ? worstQuality(b.quality).state : healthState(b).state}` });
    tabs.push(h('a', { href: backendHref(b.name), class: r.name === b.name ? 'active' : null }, dot, b.name));
  }
  document.getElementById('tabs').replaceChildren(...tabs);
  for (const btn of document.querySelectorAll('[data-window]')) btn.setAttribute('aria-pressed', String(Number(btn.dataset.window) === state.windowS));
  document.getElementById('forget-key').hidden = !getKey();
  const updated = document.getElementById('updated');
  updated.textContent = data ? `updated ${clock(data.generated_at, true)}` : state.needKey === null ? 'connecting…' : '';
  updated.classList.toggle('stale', Boolean(state.error));
  renderStore(data && data.store);

  const banners = [];
  if (state.error) {
    const since = data ? ` Showing data from ${clock(data.generated_at, true)}.` : '';
    banners.push(h('div', { class: 'callout bad' }, h('strong', {}, 'Could not refresh'), ` — ${state.error}`, since));
  }
  if (data && data.worker && data.worker.workers_note) banners.push(h('div', { class: 'callout info' }, data.worker.workers_note));
  document.getElementById('banners').replaceChildren(...banners);

  const footer = [];
  if (data) {
    const store = data.store || {};
    footer.push(`worker pid ${data.worker ? data.worker.pid : DASH}`,
      `${fmtDuration(data.window_s)} window in ${data.bucket_s} s buckets`,
      `telemetry dropped ${fmtInt((data.telemetry || {}).dropped)}`,
      // The scheme only: a database URL can carry a password.
      store.enabled ? `store ${String(store.url || '').split(':')[0]}, ${fmtInt(store.queued)} queued` : 'store off');
  }
  document.getElementById('footer').replaceChildren(...footer.map((text) => h('span', {}, text)));
}

function renderStore(store) {
  const chip = document.getElementById('store');
  chip.hidden = !store;
  if (!store) return;
  if (!store.enabled) {
    chip.className = 'chip';
    chip.replaceChildren(metric('store', 'store off'));
    return;
  }
  chip.className = `chip ${store.up ? 'up' : 'down'}`;
  chip.title = store.last_error || '';
  chip.replaceChildren(metric('store', store.up ? 'store up' : 'store down'), ' · ',
    metric('store_written', fmtInt(store.written)), ' written · ', metric('store_dropped', fmtInt(store.dropped)), ' dropped');
}

// ---- routing and rendering --------------------------------------------------------------

function route() {
  const m = location.hash.match(/^#\/backend\/(.+)$/);
  if (!m) return { page: 'fleet', name: null };
  try {
    return { page: 'backend', name: decodeURIComponent(m[1]) };
  } catch {
    return { page: 'backend', name: m[1] };
  }
}

function render(force = false) {
  const r = route();
  const shown = JSON.stringify([state.data && state.data.generated_at, state.windowS, location.hash, state.error, state.needKey]);
  renderChrome(r);
  if (shown === state.drawn && !force) return;
  state.drawn = shown;
  resetCharts();
  let content;
  let page = r.page;
  if (state.needKey !== null) [content, page] = [keyForm(state.needKey), 'key'];
  else if (!state.data) content = [h('p', { class: 'empty' }, state.error ? 'No data yet.' : 'Loading…')];
  else content = r.page === 'backend' ? backendPage(state.data, r.name) : fleetPage(state.data);
  const main = document.getElementById('page');
  main.dataset.page = page;
  if (page === 'backend') main.dataset.backend = r.name;
  else delete main.dataset.backend;
  main.replaceChildren(...content.filter((part) => part !== false && part !== null && part !== undefined));
  drawCharts();
  document.title = page === 'backend' ? `${r.name} · Switchyard` : 'Switchyard';
}

// ---- data -------------------------------------------------------------------------------

// The client key lives in sessionStorage (this tab only), or in memory where storage is off.
let keyInMemory = null;

function getKey() {
  try {
    return sessionStorage.getItem(KEY_ITEM);
  } catch {
    return keyInMemory;
  }
}

function setKey(key) {
  keyInMemory = key;
  try {
    if (key === null) sessionStorage.removeItem(KEY_ITEM);
    else sessionStorage.setItem(KEY_ITEM, key);
  } catch { /* kept in memory only */ }
}

async function errorMessage(res) {
  try {
    const body = await res.json();
    if (body && body.error && body.error.message) return String(body.error.message);
  } catch { /* not JSON: fall back on the status */ }
  return `the gateway answered ${res.status} ${res.statusText}`.trim();
}

async function load() {
  const seq = ++state.seq;
  const key = getKey();
  const headers = { Accept: 'application/json' };
  if (key) headers.Authorization = `Bearer ${key}`;
  let res;
  let failure = null;
  try {
    res = await fetch(`${DATA_URL}?window_s=${state.windowS}`, { headers, cache: 'no-store' });
    if (res.status === 401) {
      setKey(null);
      const message = await errorMessage(res);
      if (seq === state.seq) state.needKey = key ? `That key was refused: ${message}` : '';
    } else if (!res.ok) {
      failure = await errorMessage(res);
    } else {
      const data = await res.json().catch(() => null);
      if (seq !== state.seq) return;
      if (data && typeof data === 'object') Object.assign(state, { data, error: null, needKey: null });
      else failure = 'the gateway sent an answer that is not JSON';
    }
  } catch (err) {
    failure = `the gateway is unreachable (${err.message})`;
  }
  if (seq !== state.seq) return;
  if (failure) state.error = failure;
  render();
  if (state.data && !failure) {
    document.body.dataset.loaded = 'true';
    document.body.dataset.generatedAt = String(state.data.generated_at);
  }
}

async function refresh() {
  clearTimeout(state.timer);
  if (document.hidden) return; // visibilitychange resumes
  await load();
  if (state.needKey === null) {
    clearTimeout(state.timer);
    state.timer = setTimeout(refresh, POLL_MS);
  }
}

function initialWindow() {
  const asked = Number(new URLSearchParams(location.search).get('window_s'));
  return WINDOWS.includes(asked) ? asked : WINDOWS[0];
}

function start() {
  for (const btn of document.querySelectorAll('[data-window]')) {
    btn.addEventListener('click', () => {
      state.windowS = Number(btn.dataset.window);
      const url = new URL(location.href);
      url.searchParams.set('window_s', String(state.windowS)); // linkable, and kept on reload
      history.replaceState(null, '', url);
      refresh();
    });
  }
  document.getElementById('forget-key').addEventListener('click', () => {
    setKey(null);
    state.needKey = '';
    clearTimeout(state.timer);
    render();
  });
  window.addEventListener('hashchange', () => { render(); window.scrollTo(0, 0); });
  document.addEventListener('visibilitychange', () => { if (!document.hidden) refresh(); });
  let resizeTimer = 0;
  let lastWidth = window.innerWidth;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      if (window.innerWidth !== lastWidth) render(true);
      lastWidth = window.innerWidth;
    }, 200);
  });
  render();
  refresh();
}

start();
