// Number and time formatting for the dashboard: every figure on the page goes through these.

export const DASH = '–';
const INT = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
export const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
export const fmtInt = (v) => (isNum(v) ? INT.format(v) : DASH);
export const fmtPct = (v) => (isNum(v) ? `${(v * 100).toFixed(1)}%` : DASH);
export const fmtMs = (v) => (!isNum(v) ? DASH : v >= 100 ? `${INT.format(v)} ms` : `${v.toFixed(1)} ms`);
export const fmtScore = (v) => (isNum(v) ? v.toFixed(2) : DASH);
export const fmtRate = (v) => (isNum(v) ? `${v.toFixed(2)} req/s` : DASH);
export const short = (v) => String(+v.toPrecision(3));
// Evidence totals decay, so they are real numbers; 5.98 responses reads better as 6.
export const fmtCount = (v) => (!isNum(v) ? DASH : v >= 10 || Math.abs(v - Math.round(v)) < 0.05 ? fmtInt(v) : v.toFixed(1));

export function fmtUsd(v) {
  if (!isNum(v)) return DASH;
  const digits = Math.abs(v) < 1 ? 4 : 2;
  return `$${v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })}`;
}

export function fmtCompact(v) {
  if (!isNum(v)) return DASH;
  if (v >= 1e9) return `${short(v / 1e9)}B`;
  if (v >= 1e6) return `${short(v / 1e6)}M`;
  if (v >= 1e4) return `${short(v / 1e3)}k`;
  return INT.format(v);
}

export function fmtDuration(s) {
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  return `${short(s / 3600)} h`;
}

export function clock(unixS, seconds = false) {
  const d = new Date(unixS * 1000);
  const parts = [d.getHours(), d.getMinutes()].concat(seconds ? [d.getSeconds()] : []);
  return parts.map((n) => String(n).padStart(2, '0')).join(':');
}
