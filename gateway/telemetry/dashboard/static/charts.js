// Inline-SVG charts for the dashboard: scales, axes, line and bar charts, hover tooltips and the chart cards.
import { clock, fmtDuration, fmtInt, fmtMs, fmtPct, fmtScore, fmtUsd, isNum, short } from './format.js';
import { card, h, s } from './dom.js';

const PAD = { left: 58, right: 14, top: 12, bottom: 26 };
const CHART_H = 200;
const C = {
  ok: '#93c5fd', error: '#ef4444', p50: '#2563eb', p90: '#f59e0b', p99: '#db2777',
  cache: '#059669', predicted: '#7c3aed', spend: '#d97706', fidelity: '#2563eb', sla: '#16a34a',
};
const UNITS = {
  count: { tick: fmtInt, value: fmtInt, minStep: 1, integer: true },
  ms: { tick: (v) => (v >= 1000 ? `${short(v / 1000)} s` : `${short(v)} ms`), value: fmtMs },
  ratio: { tick: (v) => `${short(v * 100)}%`, value: fmtPct },
  usd: { tick: (v) => `$${short(v)}`, value: fmtUsd },
  score: { tick: short, value: fmtScore },
};
let pendingDraws = []; // charts measure their card, so they are drawn once it is on the page

/** Forgets the charts of the last page; call before building a new one. */
export function resetCharts() {
  pendingDraws = [];
}

/** Draws the charts of the page just built, now that it is on the page. */
export function drawCharts() {
  for (const draw of pendingDraws) draw();
}

function chartCard(title, note, draw) {
  const host = h('div', { class: 'chart' });
  pendingDraws.push(() => draw(host));
  return card(title, note, host);
}

// The smallest of 1, 2, 2.5, 5, 10 × 10^k at least `raw`; an integer when `integer` (counts:
// a step of 2.5 would label requests 0, 3, 5, 8, 10).
function niceStep(raw, minStep = 0, integer = false) {
  const exp = 10 ** Math.floor(Math.log10(raw));
  const steps = [1, 2, 2.5, 5, 10].map((f) => f * exp).filter((st) => !integer || Number.isInteger(st));
  return Math.max(minStep, steps.find((st) => st >= raw * (1 - 1e-9)) ?? 10 * exp);
}

/** The y axis from `lo` to `hi`: its ends and ticks at a nice step (`unit.minStep`,
 *  `unit.integer` for counts). */
export function yScale(lo, hi, unit = {}) {
  const minStep = unit.minStep || 0;
  if (!(hi > lo)) hi = lo + (minStep || 1);
  const step = niceStep((hi - lo) / 4, minStep, unit.integer);
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
  const y = yScale(o.yMin ?? 0, o.yMax ?? yHigh, o.unit);
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

export function trafficChart(series, bucketS) {
  const req = col(series, 'requests');
  const err = col(series, 'errors');
  const ok = req.map((r, i) => (isNum(r) ? r - (err[i] || 0) : null));
  return chartCard('Traffic', `requests per ${bucketS} s bucket, errors on top`, (host) => barChart(host, {
    name: 'traffic', ...timeAxis(series.t, bucketS), unit: UNITS.count,
    series: [{ name: 'succeeded', color: C.ok, values: ok }, { name: 'errors', color: C.error, values: err }],
  }));
}

export function latencyChart(name, title, note, series, bucketS) {
  return chartCard(title, note, (host) => lineChart(host, {
    name, ...timeAxis(series.t, bucketS), unit: UNITS.ms, series: percentiles(series, name),
  }));
}

export function cacheChart(series, bucketS) {
  return chartCard('Cache-hit ratio', 'prompt tokens cached: engine-reported vs router-predicted', (host) => lineChart(host, {
    name: 'cache_hit', ...timeAxis(series.t, bucketS), unit: UNITS.ratio, yMax: 1,
    series: [
      { name: 'reported', color: C.cache, values: col(series, 'cache_hit_ratio') },
      { name: 'predicted', color: C.predicted, values: col(series, 'predicted_cache_hit_ratio'), dash: true },
    ],
  }));
}

export function overheadChart(series, bucketS) {
  return chartCard('Gateway overhead', 'time the gateway adds to each request', (host) => lineChart(host, {
    name: 'overhead', ...timeAxis(series.t, bucketS), unit: UNITS.ms,
    series: [{ name: 'p50', color: C.p50, values: col(series, 'overhead_p50_ms') }, { name: 'p99', color: C.p99, values: col(series, 'overhead_p99_ms') }],
  }));
}

export function successChart(series, bucketS) {
  const values = col(series, 'success_rate');
  const low = Math.min(1, ...values.filter(isNum));
  // Zoom in on the top of the scale, where a few lost requests show, but never hide a dip.
  const yMin = Math.max(0, Math.min(0.9, Math.floor(low * 10) / 10));
  return chartCard('Success rate', 'share of requests answered 2xx', (host) => lineChart(host, {
    name: 'success_rate', ...timeAxis(series.t, bucketS), unit: UNITS.ratio, yMin, yMax: 1,
    series: [{ name: 'success', color: C.cache, values }],
  }));
}

export function spendChart(series, bucketS) {
  return chartCard('Spend', `USD per ${bucketS} s bucket`, (host) => barChart(host, {
    name: 'spend', ...timeAxis(series.t, bucketS), unit: UNITS.usd,
    series: [{ name: 'spend', color: C.spend, values: col(series, 'spend_usd') }],
  }));
}

export function qualityChart(quality, windowS) {
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
