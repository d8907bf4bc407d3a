// Switchyard's dashboard: fleet and per-backend views of GET /v1/switchyard/dashboard.
// Plain DOM and inline SVG, no framework and no network beyond the gateway itself, so it
// renders air-gapped. Every string from the API reaches the page through textContent or
// setAttribute, never innerHTML.
'use strict';

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

// ---- formatting -------------------------------------------------------------------------

const DASH = '–';
const INT = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
const fmtInt = (v) => (isNum(v) ? INT.format(v) : DASH);
const fmtPct = (v) => (isNum(v) ? `${(v * 100).toFixed(1)}%` : DASH);
const fmtMs = (v) => (!isNum(v) ? DASH : v >= 100 ? `${INT.format(v)} ms` : `${v.toFixed(1)} ms`);
const fmtScore = (v) => (isNum(v) ? v.toFixed(2) : DASH);
const fmtRate = (v) => (isNum(v) ? `${v.toFixed(2)} req/s` : DASH);
const short = (v) => String(+v.toPrecision(3));
// Evidence totals decay, so they are real numbers; 5.98 responses reads better as 6.
const fmtCount = (v) => (!isNum(v) ? DASH : v >= 10 || Math.abs(v - Math.round(v)) < 0.05 ? fmtInt(v) : v.toFixed(1));

function fmtUsd(v) {
  if (!isNum(v)) return DASH;
  const digits = Math.abs(v) < 1 ? 4 : 2;
  return `$${v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })}`;
}

function fmtCompact(v) {
  if (!isNum(v)) return DASH;
  if (v >= 1e9) return `${short(v / 1e9)}B`;
  if (v >= 1e6) return `${short(v / 1e6)}M`;
  if (v >= 1e4) return `${short(v / 1e3)}k`;
  return INT.format(v);
}

function fmtDuration(s) {
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  return `${short(s / 3600)} h`;
}

function clock(unixS, seconds = false) {
  const d = new Date(unixS * 1000);
  const parts = [d.getHours(), d.getMinutes()].concat(seconds ? [d.getSeconds()] : []);
  return parts.map((n) => String(n).padStart(2, '0')).join(':');
}

// ---- DOM helpers ------------------------------------------------------------------------

function h(tag, attrs, ...kids) {
  return fill(document.createElement(tag), attrs, kids);
}

function s(tag, attrs, ...kids) {
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

const metric = (name, text, cls) => h('span', { 'data-metric': name, class: cls }, text);
const numCell = (name, text, ...extra) => h('td', { class: 'num', 'data-metric': name }, text, ...extra);
const badge = (text, title, name) => h('span', { class: `badge ${text}`, title, 'data-metric': name }, text);
const backendHref = (name) => `#/backend/${encodeURIComponent(name)}`;

function shareBar(ratio) {
  const bar = h('span', { class: 'bar' }, h('span'));
  bar.firstChild.style.width = `${Math.max(0, Math.min(1, ratio || 0)) * 100}%`;
  return bar;
}

function table(heads, rows, empty) {
  if (!rows.length) return h('p', { class: 'empty' }, empty);
  const th = heads.map((t) => h('th', { class: t.startsWith(' ') ? 'num' : null }, t.trim()));
  return h('div', { class: 'table-wrap' }, h('table', {}, h('thead', {}, h('tr', {}, th)), h('tbody', {}, rows)));
}

function card(title, note, ...body) {
  const head = h('header', { class: 'card-head' }, h('h2', {}, title), note && h('span', { class: 'note' }, note));
  return h('section', { class: 'card' }, head, ...body);
}

// ---- state words ------------------------------------------------------------------------

const QUALITY_RANK = { unknown: 0, healthy: 1, probation: 2, ejected: 3 };

function worstQuality(list) {
  if (!list || !list.length) return { state: 'unknown', score: null, title: 'no quality evidence yet' };
  const q = list.reduce((a, b) => ((QUALITY_RANK[b.state] ?? 0) > (QUALITY_RANK[a.state] ?? 0) ? b : a));
  // One number for the table: the weaker of the two scores is what limits routing.
  const scores = [q.fidelity, q.sla].filter(isNum);
  const title = `${q.model}: fidelity ${fmtScore(q.fidelity)}, SLA ${fmtScore(q.sla)}`;
  return { state: q.state, score: scores.length ? Math.min(...scores) : null, title };
}

const qualityBadge = (q) => [badge(q.state, null, 'quality_state'), ' ', metric('quality_score', fmtScore(q.score), 'score')];

function healthState(b) {
  const health = b.health || {};
  if (health.healthy === false) return { state: 'unhealthy', title: health.reason };
  if ((b.quality || []).some((q) => q.state === 'ejected')) return { state: 'ejected', title: 'ejected for quality' };
  return { state: 'healthy', title: health.reason };
}

function tone(successRate) {
  if (!isNum(successRate)) return '';
  return successRate < 0.95 ? 'bad' : successRate < 0.99 ? 'warn' : '';
}

// ---- headline tiles ---------------------------------------------------------------------

function tile(label, value, sub, cls) {
  return h('div', { class: `tile ${cls || ''}` }, h('div', { class: 'label' }, label), h('div', { class: 'value' }, value), h('div', { class: 'sub' }, sub));
}

function tiles(sum) {
  const status = sum.status || {};
  const ttft = sum.ttft_ms || {};
  const tpot = sum.tpot_ms || {};
  const over = sum.overhead_ms || {};
  const errors = (status['4xx'] || 0) + (status['5xx'] || 0);
  return h('section', { class: 'tiles' },
    tile('Requests', metric('requests', fmtInt(sum.requests)), metric('rps', fmtRate(sum.rps))),
    tile('Success rate', metric('success_rate', fmtPct(sum.success_rate)), `${fmtInt(status['2xx'] || 0)} answered 2xx`, tone(sum.success_rate)),
    tile('Errors', metric('errors', fmtInt(errors)), `${fmtInt(status['4xx'] || 0)} 4xx · ${fmtInt(status['5xx'] || 0)} 5xx`, errors ? 'warn' : ''),
    tile('Retries', metric('retries', fmtInt(sum.retries)), 'sent on to the next candidate'),
    tile('Spend', metric('spend_usd', fmtUsd(sum.spend_usd)), `${fmtCompact(sum.prompt_tokens)} in · ${fmtCompact(sum.completion_tokens)} out tokens`),
    tile('Gateway overhead p50', metric('overhead_p50_ms', fmtMs(over.p50)), 'time the gateway adds'),
    tile('TTFT p50', metric('ttft_p50_ms', fmtMs(ttft.p50)), ['p90 ', metric('ttft_p90_ms', fmtMs(ttft.p90))]),
    tile('TTFT p99', metric('ttft_p99_ms', fmtMs(ttft.p99)), 'time to first token'),
    tile('TPOT p50', metric('tpot_p50_ms', fmtMs(tpot.p50)), ['p90 ', metric('tpot_p90_ms', fmtMs(tpot.p90))]),
    tile('Cache hit (engine)', metric('cache_hit_ratio', fmtPct(sum.cache_hit_ratio)),
      `${fmtCompact(sum.cached_tokens)} of ${fmtCompact(sum.prompt_tokens)} prompt tokens`),
    tile('Cache hit (predicted)', metric('predicted_cache_hit_ratio', fmtPct(sum.predicted_cache_hit_ratio)),
      `${fmtCompact(sum.predicted_cached_tokens)} tokens, by the router`),
    tile('Gateway overhead p99', metric('overhead_p99_ms', fmtMs(over.p99)), ['p90 ', fmtMs(over.p90)]),
  );
}

// ---- tables -----------------------------------------------------------------------------

function backendsTable(backends) {
  const rows = backends.map((b) => {
    const sum = b.summary || {};
    const health = healthState(b);
    const quality = worstQuality(b.quality);
    return h('tr', { 'data-backend': b.name },
      h('td', { class: 'name' }, h('a', { href: backendHref(b.name) }, b.name), h('span', { class: 'kind' }, b.kind)),
      h('td', {}, badge(health.state, health.title, 'health')),
      h('td', { class: 'name', title: quality.title }, qualityBadge(quality)),
      numCell('requests', fmtInt(sum.requests)),
      numCell('share', fmtPct(sum.share), shareBar(sum.share)),
      numCell('success_rate', fmtPct(sum.success_rate)),
      numCell('ttft_p90_ms', fmtMs((sum.ttft_ms || {}).p90)),
      numCell('tpot_p90_ms', fmtMs((sum.tpot_ms || {}).p90)),
      numCell('cache_hit_ratio', fmtPct(sum.cache_hit_ratio)),
      numCell('spend_usd', fmtUsd(sum.spend_usd)));
  });
  const heads = ['Backend', 'Health', 'Quality', ' Requests', ' Share', ' Success', ' TTFT p90', ' TPOT p90', ' Cache hit', ' Spend'];
  return card('Backends', `${backends.length} configured`, table(heads, rows, 'No backends configured.'));
}

function reasonsCard(reasons, note) {
  const rows = (reasons || []).map((r) => h('tr', { 'data-policy': r.policy },
    h('td', {}, h('code', {}, r.policy)),
    h('td', { class: 'num' }, fmtInt(r.count)),
    h('td', { class: 'num' }, fmtPct(r.share), shareBar(r.share)),
    h('td', { class: 'example' }, r.example)));
  return card('Top routing reasons', note, table(['Policy', ' Requests', ' Share', 'Example reason'], rows, 'No routed requests in this window.'));
}

function errorsCard(sum) {
  const status = sum.status || {};
  const total = sum.requests || 0;
  const share = (n) => fmtPct(total ? n / total : null);
  const classes = ['2xx', '4xx', '5xx'].map((k) => h('tr', { 'data-status': k },
    h('td', {}, h('span', { class: `status s${k[0]}` }, k)),
    h('td', { class: 'num' }, fmtInt(status[k] || 0)),
    h('td', { class: 'num' }, share(status[k] || 0))));
  const codes = Object.entries(sum.errors || {}).sort((a, b) => b[1] - a[1]).map(([code, n]) => h('tr', { 'data-error': code },
    h('td', {}, h('code', {}, code)), h('td', { class: 'num' }, fmtInt(n)), h('td', { class: 'num' }, share(n))));
  return card('Errors', 'status classes and error codes',
    h('div', { class: 'split' },
      table(['Status', ' Requests', ' Share'], classes, ''),
      table(['Error code', ' Requests', ' Share'], codes, 'No errors in this window.')));
}

function qualityCard(quality) {
  const blocks = (quality || []).map((q) => {
    const signals = (q.signals || []).map((sig) => h('tr', { 'data-signal': sig.signal },
      h('td', {}, sig.label || sig.signal),
      h('td', { class: 'num', 'data-metric': 'signal_score' }, h('span', { class: `score ${scoreTone(sig.score)}` }, fmtScore(sig.score))),
      h('td', { class: 'num', 'data-metric': 'signal_rate' }, fmtPct(sig.rate)),
      h('td', { class: 'num', 'data-metric': 'signal_total' }, fmtCount(sig.total)),
      h('td', { class: 'example' }, sig.summary)));
    return h('div', { class: 'model', 'data-model': q.model },
      h('div', { class: 'model-head' },
        h('strong', {}, q.model), badge(q.state, null, 'model_quality_state'),
        h('span', {}, 'fidelity ', metric('fidelity', fmtScore(q.fidelity), 'score')),
        h('span', {}, 'SLA ', metric('sla', fmtScore(q.sla), 'score')),
        q.ejected_for_s > 0 && h('span', { class: 'muted' }, `ejected for ${fmtDuration(q.ejected_for_s)}`)),
      q.reason && h('p', { class: 'reason' }, q.reason),
      table(['Signal', ' Score', ' Rate', ' Evidence', 'Summary'], signals, 'No signal has evidence yet.'));
  });
  return card('Quality', 'live scores per model, from passive signals and probes',
    blocks.length ? blocks : h('p', { class: 'empty' }, 'No quality evidence yet.'));
}

const scoreTone = (v) => (!isNum(v) ? '' : v < 0.5 ? 'bad' : v < 0.85 ? 'warn' : 'good');

// ---- charts -----------------------------------------------------------------------------

const PAD = { left: 58, right: 14, top: 12, bottom: 26 };
const CHART_H = 200;
const C = {
  ok: '#93c5fd', error: '#ef4444', p50: '#2563eb', p90: '#f59e0b', p99: '#db2777',
  cache: '#059669', predicted: '#7c3aed', spend: '#d97706', fidelity: '#2563eb', sla: '#16a34a',
};
const UNITS = {
  count: { tick: fmtInt, value: fmtInt, minStep: 1 },
  ms: { tick: (v) => (v >= 1000 ? `${short(v / 1000)} s` : `${short(v)} ms`), value: fmtMs },
  ratio: { tick: (v) => `${short(v * 100)}%`, value: fmtPct },
  usd: { tick: (v) => `$${short(v)}`, value: fmtUsd },
  score: { tick: short, value: fmtScore },
};
let pendingDraws = []; // charts measure their card, so they are drawn once it is on the page

function chartCard(title, note, draw) {
  const host = h('div', { class: 'chart' });
  pendingDraws.push(() => draw(host));
  return card(title, note, host);
}

function niceStep(raw, minStep = 0) {
  const exp = 10 ** Math.floor(Math.log10(raw));
  const f = raw / exp;
  return Math.max(minStep, (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * exp);
}

function yScale(lo, hi, minStep) {
  if (!(hi > lo)) hi = lo + (minStep || 1);
  const step = niceStep((hi - lo) / 4, minStep);
  const bottom = Math.floor(lo / step + 1e-9) * step;
  const top = Math.ceil(hi / step - 1e-9) * step;
  const ticks = [];
  for (let v = bottom; v <= top + step / 2; v += step) ticks.push(+v.toPrecision(12));
  return { bottom, top, ticks };
}

function ticksEvery(x0, x1) {
  const step = [60, 120, 300, 600, 900, 1800, 3600, 7200, 21600].find((st) => (x1 - x0) / st <= 6) || 86400;
  const out = [];
  for (let v = Math.ceil(x0 / step) * step; v <= x1; v += step) out.push(v);
  return out;
}

function timeAxis(t, bucketS) {
  if (!t || !t.length) return { x: [], xDomain: [0, 1], xTicks: [], xTick: String, xLabel: String };
  const x1 = t[t.length - 1] + bucketS;
  return {
    x: t.map((v) => v + bucketS / 2), // a bucket's value belongs to its middle
    xDomain: [t[0], x1], xTicks: ticksEvery(t[0], x1), xTick: (v) => clock(v),
    xLabel: (i) => `${clock(t[i], true)}–${clock(t[i] + bucketS, true)}`,
  };
}

function frame(host, o, yHigh) {
  const width = Math.max(300, Math.floor(host.clientWidth) || 600);
  const plotW = width - PAD.left - PAD.right;
  const plotH = CHART_H - PAD.top - PAD.bottom;
  const [x0, x1] = o.xDomain;
  const y = yScale(o.yMin ?? 0, o.yMax ?? yHigh, o.unit.minStep);
  const sx = (v) => PAD.left + ((v - x0) / (x1 - x0 || 1)) * plotW;
  const sy = (v) => PAD.top + plotH - ((Math.min(Math.max(v, y.bottom), y.top) - y.bottom) / (y.top - y.bottom)) * plotH;
  const svg = s('svg', { class: 'plot', width, height: CHART_H, viewBox: `0 0 ${width} ${CHART_H}`, 'data-chart': o.name, role: 'img', 'aria-label': o.name });
  for (const v of y.ticks) {
    svg.append(
      s('line', { class: v === y.bottom ? 'axis' : 'gridline', x1: PAD.left, x2: width - PAD.right, y1: sy(v), y2: sy(v) }),
      s('text', { class: 'tick', x: PAD.left - 6, y: sy(v) + 4, 'text-anchor': 'end' }, o.unit.tick(v)));
  }
  for (const v of o.xTicks) {
    const x = sx(v);
    // Labels at the edges lean inwards rather than being cut off.
    const anchor = x < PAD.left + 16 ? 'start' : x > width - PAD.right - 16 ? 'end' : 'middle';
    svg.append(s('line', { class: 'axis', x1: x, x2: x, y1: PAD.top + plotH, y2: PAD.top + plotH + 4 }),
      s('text', { class: 'tick', x, y: CHART_H - 7, 'text-anchor': anchor }, o.xTick(v)));
  }
  host.replaceChildren(svg);
  return { svg, sx, sy, width, plotW, plotH };
}

/** Lines over a shared x, e.g. lineChart(host, {name, ...timeAxis(t, 10), unit: UNITS.ms,
 *  series: [{name, values, color, dash}], yMax?, yMin?}); nulls leave gaps. */
function lineChart(host, o) {
  const all = o.series.flatMap((sr) => sr.values).filter(isNum);
  const f = frame(host, o, all.length ? Math.max(...all) : 0);
  if (o.under) o.under(f);
  let points = 0;
  for (const sr of o.series) {
    let d = '';
    sr.values.forEach((v, i) => {
      if (!isNum(v)) return;
      points += 1;
      const joined = i > 0 && isNum(sr.values[i - 1]);
      const [x, y] = [f.sx(o.x[i]).toFixed(1), f.sy(v).toFixed(1)];
      d += `${joined ? 'L' : 'M'}${x},${y}`;
      if (!joined && !isNum(sr.values[i + 1])) f.svg.append(s('circle', { cx: x, cy: y, r: 2, fill: sr.color }));
    });
    if (d) f.svg.append(s('path', { class: 'line', d, stroke: sr.color, 'stroke-dasharray': sr.dash ? '5 4' : null }));
  }
  finish(host, f, o, points);
}

/** Stacked bars, one per bucket; same options as lineChart. */
function barChart(host, o) {
  const totals = o.x.map((_, i) => {
    const vals = o.series.map((sr) => sr.values[i]).filter(isNum);
    return vals.length ? vals.reduce((a, b) => a + b, 0) : null;
  });
  const f = frame(host, o, Math.max(0, ...totals.filter(isNum)));
  const width = Math.max(1, f.plotW / Math.max(1, o.x.length) - (o.x.length > 120 ? 0.5 : 1.5));
  let points = 0;
  totals.forEach((total, i) => {
    if (total === null) return;
    points += 1;
    let base = 0;
    for (const sr of o.series) {
      const v = sr.values[i];
      if (!isNum(v) || v <= 0) continue;
      const [top, bottom] = [f.sy(base + v), f.sy(base)];
      const x = f.sx(o.x[i]) - width / 2;
      const height = Math.max(0.5, bottom - top);
      f.svg.append(s('rect', { x: x.toFixed(1), y: top.toFixed(1), width: width.toFixed(1), height: height.toFixed(1), fill: sr.color }));
      base += v;
    }
  });
  finish(host, f, o, points);
}

function finish(host, f, o, points) {
  f.svg.setAttribute('data-points', String(points));
  if (!points) {
    const [x, y] = [PAD.left + f.plotW / 2, PAD.top + f.plotH / 2];
    f.svg.append(s('text', { class: 'nodata', x, y, 'text-anchor': 'middle' }, o.empty || 'no data in this window'));
  }
  const keys = o.series.map((sr) => swatchKey(sr.name, sr.color, sr.dash ? 'dash' : 'line'));
  host.append(h('div', { class: 'legend' }, keys, o.legendExtra || []));
  if (points) hover(host, f, o);
}

function swatchKey(name, color, kind) {
  const sw = h('i', { class: `swatch ${kind}` });
  sw.style.setProperty('--c', color);
  return h('span', { class: 'key' }, sw, name);
}

// A guide line and a tooltip with every series' value at the nearest x.
function hover(host, f, o) {
  const guide = s('line', { class: 'guide', y1: PAD.top, y2: PAD.top + f.plotH, visibility: 'hidden' });
  const pad = s('rect', { x: PAD.left, y: PAD.top, width: f.plotW, height: f.plotH, fill: 'transparent' });
  const tip = h('div', { class: 'tip', hidden: true });
  f.svg.append(guide, pad);
  host.append(tip);
  pad.addEventListener('pointermove', (ev) => {
    const box = f.svg.getBoundingClientRect();
    const px = ((ev.clientX - box.left) * f.width) / box.width;
    let best = 0;
    o.x.forEach((x, i) => { if (Math.abs(f.sx(x) - px) < Math.abs(f.sx(o.x[best]) - px)) best = i; });
    const gx = f.sx(o.x[best]);
    guide.setAttribute('x1', gx);
    guide.setAttribute('x2', gx);
    guide.setAttribute('visibility', 'visible');
    tip.replaceChildren(h('div', { class: 'tip-head' }, o.xLabel(best)),
      ...o.series.map((sr) => h('div', {}, swatchKey(sr.name, sr.color, 'dot'), h('b', {}, o.unit.value(sr.values[best])))));
    const left = (gx / f.width) * box.width;
    tip.style.left = `${left}px`;
    tip.style.transform = left > box.width / 2 ? 'translateX(calc(-100% - 12px))' : 'translateX(12px)';
    tip.hidden = false;
  });
  pad.addEventListener('pointerleave', () => {
    tip.hidden = true;
    guide.setAttribute('visibility', 'hidden');
  });
}

// ---- chart cards ------------------------------------------------------------------------

const col = (series, key) => series[key] || [];
const percentiles = (series, prefix) => ['p50', 'p90', 'p99'].map((p) => ({ name: p, color: C[p], values: col(series, `${prefix}_${p}_ms`) }));

function trafficChart(series, bucketS) {
  const req = col(series, 'requests');
  const err = col(series, 'errors');
  const ok = req.map((r, i) => (isNum(r) ? r - (err[i] || 0) : null));
  return chartCard('Traffic', `requests per ${bucketS} s bucket, errors on top`, (host) => barChart(host, {
    name: 'traffic', ...timeAxis(series.t, bucketS), unit: UNITS.count,
    series: [{ name: 'succeeded', color: C.ok, values: ok }, { name: 'errors', color: C.error, values: err }],
  }));
}

function latencyChart(name, title, note, series, bucketS) {
  return chartCard(title, note, (host) => lineChart(host, {
    name, ...timeAxis(series.t, bucketS), unit: UNITS.ms, series: percentiles(series, name),
  }));
}

function cacheChart(series, bucketS) {
  return chartCard('Cache-hit ratio', 'prompt tokens cached: engine-reported vs router-predicted', (host) => lineChart(host, {
    name: 'cache_hit', ...timeAxis(series.t, bucketS), unit: UNITS.ratio, yMax: 1,
    series: [
      { name: 'reported', color: C.cache, values: col(series, 'cache_hit_ratio') },
      { name: 'predicted', color: C.predicted, values: col(series, 'predicted_cache_hit_ratio'), dash: true },
    ],
  }));
}

function overheadChart(series, bucketS) {
  return chartCard('Gateway overhead', 'time the gateway adds to each request', (host) => lineChart(host, {
    name: 'overhead', ...timeAxis(series.t, bucketS), unit: UNITS.ms,
    series: [{ name: 'p50', color: C.p50, values: col(series, 'overhead_p50_ms') }, { name: 'p99', color: C.p99, values: col(series, 'overhead_p99_ms') }],
  }));
}

function successChart(series, bucketS) {
  const values = col(series, 'success_rate');
  const low = Math.min(1, ...values.filter(isNum));
  // Zoom in on the top of the scale, where a few lost requests show, but never hide a dip.
  const yMin = Math.max(0, Math.min(0.9, Math.floor(low * 10) / 10));
  return chartCard('Success rate', 'share of requests answered 2xx', (host) => lineChart(host, {
    name: 'success_rate', ...timeAxis(series.t, bucketS), unit: UNITS.ratio, yMin, yMax: 1,
    series: [{ name: 'success', color: C.cache, values }],
  }));
}

function spendChart(series, bucketS) {
  return chartCard('Spend', `USD per ${bucketS} s bucket`, (host) => barChart(host, {
    name: 'spend', ...timeAxis(series.t, bucketS), unit: UNITS.usd,
    series: [{ name: 'spend', color: C.spend, values: col(series, 'spend_usd') }],
  }));
}

function qualityChart(quality, windowS) {
  const models = quality || [];
  const ages = [...new Set(models.flatMap((q) => (q.history || []).map((p) => p.age_s)))].sort((a, b) => b - a);
  const oldest = ages.length ? Math.max(ages[0], 60) : windowS;
  const many = models.length > 1;
  const series = models.flatMap((q, m) => {
    const at = new Map((q.history || []).map((p) => [p.age_s, p]));
    const suffix = many ? ` (${q.model})` : '';
    return [
      { name: `fidelity${suffix}`, color: C.fidelity, dash: m > 0, values: ages.map((a) => at.get(a)?.fidelity ?? null) },
      { name: `SLA${suffix}`, color: C.sla, dash: m > 0, values: ages.map((a) => at.get(a)?.sla ?? null) },
    ];
  });
  const first = new Map(((models[0] || {}).history || []).map((p) => [p.age_s, p.state]));
  const ago = (v) => (v === 0 ? 'now' : `−${fmtDuration(-v)}`);
  return chartCard('Quality score', 'fidelity and SLA, 0–1; shaded while on probation or ejected', (host) => lineChart(host, {
    name: 'quality', x: ages.map((a) => -a), xDomain: [-oldest, 0], xTicks: ticksEvery(-oldest, 0), xTick: ago,
    xLabel: (i) => `${fmtDuration(ages[i])} ago · ${first.get(ages[i]) || 'unknown'}`,
    unit: UNITS.score, yMax: 1, series, empty: 'no quality evidence yet',
    under: (f) => stateBands(f, ages, first),
    legendExtra: [swatchKey('probation', '#fde68a', 'box'), swatchKey('ejected', '#fecaca', 'box')],
  }));
}

// Background shading for the runs of points where the first model was not healthy.
function stateBands(f, ages, stateAt) {
  const step = ages.length > 1 ? ages[0] - ages[1] : 10;
  ages.forEach((age, i) => {
    const st = stateAt.get(age);
    if (st !== 'probation' && st !== 'ejected') return;
    const [x0, x1] = [f.sx(-age - step / 2), f.sx(-age + step / 2)];
    const left = Math.max(x0, PAD.left);
    f.svg.append(s('rect', { class: `band ${st}`, x: left, y: PAD.top, width: Math.max(0, Math.min(x1, PAD.left + f.plotW) - left), height: f.plotH }));
  });
}

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
      h('h1', {}, b.name), badge(healthState(b).state, health.reason, 'health'),
      h('span', { class: 'stat', title: quality.title }, 'quality ', qualityBadge(quality)),
      h('span', { class: 'chip' }, b.kind), h('span', { class: 'muted' }, (b.models || []).join(', ')),
      h('span', { class: 'stat' }, metric('in_flight', fmtInt(health.in_flight)), ` / ${fmtInt(health.max_concurrency)} in flight`),
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

// Health check and quality state in words, loudest first.
function statusNotes(b) {
  const health = b.health || {};
  const notes = [];
  if (health.healthy === false) notes.push(['bad', 'Health check failing', health.reason]);
  for (const q of b.quality || []) {
    const since = q.ejected_for_s > 0 ? ` (${fmtDuration(q.ejected_for_s)})` : '';
    if (q.state === 'ejected') notes.push(['bad', `${q.model}: ejected for quality${since}`, q.reason]);
    if (q.state === 'probation') notes.push(['warn', `${q.model}: on probation`, q.reason]);
  }
  if (!notes.length) notes.push(['ok', 'Healthy', `health check: ${health.reason || 'ok'}; quality within peers' range`]);
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
  pendingDraws = [];
  let content;
  let page = r.page;
  if (state.needKey !== null) [content, page] = [keyForm(state.needKey), 'key'];
  else if (!state.data) content = [h('p', { class: 'empty' }, state.error ? 'No data yet.' : 'Loading…')];
  else content = r.page === 'backend' ? backendPage(state.data, r.name) : fleetPage(state.data);
  const main = document.getElementById('page');
  main.dataset.page = page;
  if (page === 'backend') main.dataset.backend = r.name;
  else delete main.dataset.backend;
  main.replaceChildren(...content);
  for (const draw of pendingDraws) draw();
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
