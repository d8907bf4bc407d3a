// Dashboard panels built from the data API's answer: state words, headline tiles and the tables.
import { DASH, clock, fmtCompact, fmtCount, fmtDuration, fmtInt, fmtMs, fmtPct, fmtRate, fmtScore, fmtUsd, isNum } from './format.js';
import { backendHref, badge, card, h, metric, numCell, shareBar, table } from './dom.js';

const QUALITY_RANK = { unknown: 0, healthy: 1, suspect: 2, probation: 3, ejected: 4 };

export function worstQuality(list) {
  if (!list || !list.length) return { state: 'unknown', score: null, title: 'no quality evidence yet' };
  const q = list.reduce((a, b) => ((QUALITY_RANK[b.state] ?? 0) > (QUALITY_RANK[a.state] ?? 0) ? b : a));
  // One number for the table: the weaker of the two scores is what limits routing.
  const scores = [q.fidelity, q.sla].filter(isNum);
  const title = `${q.model}: fidelity ${fmtScore(q.fidelity)}, SLA ${fmtScore(q.sla)}`;
  return { state: q.state, score: scores.length ? Math.min(...scores) : null, title };
}

/** What the quality book says of a backend in words: nothing to compare yet when it has
 *  had no traffic and holds no quality evidence. */
export function qualityNote(b) {
  const evidence = (b.quality || []).some((q) => (q.signals || []).some((sg) => sg.total > 0));
  if (evidence) return "quality within peers' range";
  return ((b.summary || {}).requests || 0) > 0 ? 'no quality evidence yet' : 'no traffic yet';
}

export const qualityBadge = (q) => [badge(q.state, null, 'quality_state'), ' ', metric('quality_score', fmtScore(q.score), 'score')];

export function healthState(b) {
  const health = b.health || {};
  if (health.healthy === false) return { state: 'unhealthy', title: health.reason };
  if ((b.quality || []).some((q) => q.state === 'ejected')) return { state: 'ejected', title: 'ejected for quality' };
  return { state: 'healthy', title: health.reason };
}

// A backend whose key is missing (its variable unset or empty, or none named): the problem
// names the variable only.
export function keyBadge(credentials) {
  if (!credentials || !credentials.problem) return null;
  return h('span', { class: 'badge nokey', title: credentials.problem, 'data-metric': 'credentials' }, 'no key');
}

function tone(successRate) {
  if (!isNum(successRate)) return '';
  return successRate < 0.95 ? 'bad' : successRate < 0.99 ? 'warn' : '';
}

// ---- headline tiles ---------------------------------------------------------------------

function tile(label, value, sub, cls) {
  return h('div', { class: `tile ${cls || ''}` }, h('div', { class: 'label' }, label), h('div', { class: 'value' }, value), h('div', { class: 'sub' }, sub));
}

export function tiles(sum) {
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
    tile('Held by flow control', metric('held', fmtInt(sum.held)),
      `${fmtInt(sum.shed)} refused · ${fmtInt(sum.moved)} moved · wait p90 ${fmtMs((sum.queue_wait_ms || {}).p90)}`,
      sum.shed ? 'warn' : ''),
  );
}

// ---- tables -----------------------------------------------------------------------------

export function backendsTable(backends) {
  const rows = backends.map((b) => {
    const sum = b.summary || {};
    const health = healthState(b);
    const quality = worstQuality(b.quality);
    return h('tr', { 'data-backend': b.name },
      h('td', { class: 'name' }, h('a', { href: backendHref(b.name) }, b.name), h('span', { class: 'kind' }, b.kind)),
      h('td', {}, badge(health.state, health.title, 'health'), keyBadge(b.credentials)),
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

export function reasonsCard(reasons, note) {
  const rows = (reasons || []).map((r) => h('tr', { 'data-policy': r.policy },
    h('td', {}, h('code', {}, r.policy)),
    h('td', { class: 'num' }, fmtInt(r.count)),
    h('td', { class: 'num' }, fmtPct(r.share), shareBar(r.share)),
    h('td', { class: 'example' }, r.example)));
  return card('Top routing reasons', note, table(['Policy', ' Requests', ' Share', 'Example reason'], rows, 'No routed requests in this window.'));
}

export function errorsCard(sum) {
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

// Requests the gateway refused itself (bad body, key, model, size; rate limits, budgets; flow
// control's 429s): counts since start by code, and the last few of each code.
export function refusedCard(counts, recent) {
  const codes = Object.entries(counts || {}).sort((a, b) => b[1] - a[1]).map(([code, n]) => h('tr', { 'data-refused-code': code },
    h('td', {}, h('code', {}, code)), h('td', { class: 'num' }, fmtInt(n))));
  const rows = (recent || []).map((r) => h('tr', { 'data-refused': r.code },
    h('td', {}, clock(r.at, true)),
    h('td', {}, h('span', { class: `status s${String(r.status)[0]}` }, String(r.status))),
    h('td', {}, h('code', {}, r.code)),
    h('td', {}, r.route || DASH),
    h('td', {}, r.key_id ? h('code', {}, r.key_id) : DASH),
    h('td', { class: 'example' }, r.reason)));
  return card('Refused by the gateway', 'answered before or instead of routing: counts since start, the last few of each code',
    h('div', { class: 'split' },
      table(['Error code', ' Refused'], codes, 'Nothing refused.'),
      table(['Time', 'Status', 'Code', 'Route', 'Key', 'Reason'], rows, 'No refused request kept.')));
}

export function qualityCard(quality) {
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

// Cascades (a cheap tier first, a stronger one when the answer fails its checks): per
// cascade, which tier answered, each tier's escalations and the checks behind them, and
// the cost per passing answer against sending everything to the top tier.
export function cascadesCard(cascades) {
  const blocks = (cascades || []).map((c) => {
    const tiers = (c.tiers || []).map((t) => h('tr', { 'data-tier': t.tier },
      h('td', {}, h('code', {}, t.tier)),
      h('td', { class: 'num' }, fmtInt(t.attempts)),
      h('td', { class: 'num' }, fmtInt((c.answered_by || {})[t.tier] || 0)),
      h('td', { class: 'num' }, fmtPct(t.escalation_rate), shareBar(t.escalation_rate))));
    const checks = Object.entries(c.checks || {}).map(([key, n]) => h('tr', { 'data-check': key },
      h('td', {}, h('code', {}, key)), h('td', { class: 'num' }, fmtInt(n))));
    return h('div', { class: 'model', 'data-cascade': c.cascade },
      h('div', { class: 'model-head' },
        h('strong', {}, c.cascade),
        h('span', {}, 'answers ', metric('cascade_answers', fmtInt(c.answers))),
        h('span', {}, 'passing ', metric('cascade_passing', fmtPct(c.answers ? c.passing / c.answers : null))),
        h('span', {}, 'cost per passing answer ', metric('cascade_cost_per_passing', fmtUsd(c.cost_per_passing_usd))),
        h('span', {}, 'vs top tier ', metric('cascade_saving', c.saving === null ? DASH : `${fmtPct(c.saving)} saved`)),
        c.skipped_tiers > 0 && h('span', { class: 'muted' }, `${fmtInt(c.skipped_tiers)} tiers skipped (learned start)`),
        c.failed > 0 && h('span', { class: 'muted' }, `${fmtInt(c.failed)} answers failed at the last tier`)),
      h('div', { class: 'split' },
        table(['Tier', ' Attempts', ' Answered', ' Escalated'], tiers, 'No attempt in this window.'),
        table(['Tier / check failed', ' Failures'], checks, 'No check failed in this window.')));
  });
  return card('Cascades', 'cheap tier first: where answers came from and why requests escalated',
    blocks.length ? blocks : h('p', { class: 'empty' }, 'No request reached a cascade in this window.'));
}

// DNS discovery: per discovering entry, its name and record, the backends it has now (of
// at most max_backends), when it was last resolved, and the last lookup's error.
export function discoveryCard(discovery) {
  const blocks = (discovery || []).map((d) => {
    const names = (d.backends || []).map((name) => h('tr', { 'data-discovered': name },
      h('td', {}, h('a', { href: backendHref(name) }, name))));
    return h('div', { class: 'model', 'data-discovery': d.entry },
      h('div', { class: 'model-head' },
        h('strong', {}, d.entry),
        h('span', {}, h('code', {}, `${d.record} ${d.dns}`)),
        h('span', {}, 'backends ', metric('discovered', `${fmtInt((d.backends || []).length)} of max ${fmtInt(d.max_backends)}`)),
        d.found > (d.backends || []).length && h('span', { class: 'muted' }, `${fmtInt(d.found)} addresses found`),
        h('span', { class: 'muted' }, d.resolved_at ? `resolved ${clock(d.resolved_at, true)}, every ${d.interval_s} s` : 'not resolved yet')),
      d.last_error && h('p', { class: 'reason' }, `last lookup failed${d.failed_at ? ` at ${clock(d.failed_at, true)}` : ''}: ${d.last_error} (its backends stay)`),
      table(['Backend'], names, 'No address: its routes have no member from it.'));
  });
  return card('DNS discovery', 'backend entries that follow a DNS name: one backend per address',
    blocks);
}
