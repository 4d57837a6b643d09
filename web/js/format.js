// Number, time and size formatting shared by the views. Pure.

export function fmtMs(v, digits = 3) {
  return v === null || v === undefined || !Number.isFinite(v) ? "-" : v.toFixed(digits);
}

export function fmtNumber(v, digits = 3) {
  if (v === null || v === undefined) return "-";
  if (typeof v !== "number") return String(v);
  if (Number.isInteger(v)) return String(v);
  return v.toFixed(digits);
}

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];
export function fmtBytes(bytes) {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return "-";
  let v = bytes;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < UNITS.length - 1) { v /= 1024; u++; }
  return u === 0 ? `${v} B` : `${v.toFixed(2)} ${UNITS[u]}`;
}

export function fmtMegabytes(mb) {
  if (!mb) return "-";
  return mb >= 1024 ? `${(mb / 1024).toFixed(mb % 1024 === 0 ? 0 : 1)} GiB` : `${mb} MiB`;
}

// "2026-11-21 20:05:00" in the browser's time zone.
export function fmtTime(iso) {
  if (!iso) return "-";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// "12 s ago", "5 min ago", "3 h ago", "2 d ago".
export function fmtAgo(iso, now = Date.now()) {
  if (!iso) return "never";
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return iso;
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

// "in 5 min", "in 3 h"; a time already passed: "due 2 min ago".
export function fmtUntil(iso, now = Date.now()) {
  if (!iso) return "never";
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return iso;
  if (t <= now) return `due ${fmtAgo(iso, now)}`;
  const s = Math.round((t - now) / 1000);
  if (s < 60) return `in ${s} s`;
  if (s < 3600) return `in ${Math.round(s / 60)} min`;
  if (s < 86400) return `in ${Math.round(s / 3600)} h`;
  return `in ${Math.round(s / 86400)} d`;
}

export function percent(part, whole) {
  return whole > 0 ? Math.round((100 * part) / whole) : 0;
}

// "Image Classification/ViT" -> "ViT" (chart axis labels).
export function shortLabel(label) {
  const i = label.lastIndexOf("/");
  return i < 0 ? label : label.slice(i + 1);
}

// ---- figures with their units -------------------------------------------------------------------
// One rule for every duration: milliseconds under a second, seconds under ten minutes, then
// minutes and hours; four significant digits ("9.325 ms", "74.35 s", "12.40 min"), three
// decimals under a millisecond ("0.412 ms"). A raw float never reaches the page.

// `v` with `digits` significant digits (never in exponent form), e.g. sig(74.35201, 4) = "74.35".
function significant(v, digits) {
  const rounded = Number(v.toPrecision(digits));  // 0.99996 -> 1: decimals from the rounded value
  if (rounded === 0) return "0";
  const decimals = Math.max(0, digits - 1 - Math.floor(Math.log10(Math.abs(rounded))));
  return rounded.toFixed(Math.min(decimals, 20));
}

const finite = (v) => typeof v === "number" && Number.isFinite(v);

export function fmtDuration(ms) {
  if (!finite(ms)) return "-";
  const a = Math.abs(ms);
  if (a < 1) return `${ms.toFixed(3)} ms`;
  // Rounding to four digits can carry into the next unit (999.96 ms is "1.000 s", not "1000 ms").
  if (Number(significant(a, 4)) < 1000) return `${significant(ms, 4)} ms`;
  if (Number(significant(a / 1000, 4)) < 600) return `${significant(ms / 1000, 4)} s`;
  if (a < 3600 * 1000) return `${significant(ms / 60000, 4)} min`;
  return `${significant(ms / 3600000, 4)} h`;
}

// Whole numbers with thousands separators: 74352 -> "74,352".
export function fmtCount(n) {
  if (!finite(n)) return "-";
  return Math.round(n).toLocaleString("en-US");
}

// A plain figure: integers grouped, others to four significant digits.
export function fmtFigure(v) {
  if (!finite(v)) return v === null || v === undefined ? "-" : String(v);
  if (Number.isInteger(v)) return fmtCount(v);
  return Math.abs(v) >= 1000 ? fmtCount(v) : significant(v, 4);
}

// A memory size given in MiB (report cells): "850 MiB", "1.50 GiB".
export function fmtMiB(mb) {
  if (!finite(mb)) return "-";
  if (Math.abs(mb) >= 1024) return `${significant(mb / 1024, 3)} GiB`;
  return `${fmtFigure(mb >= 100 ? Math.round(mb) : mb)} MiB`;
}

// A coefficient of variation (a fraction) as a percentage: 0.01234 -> "1.23%".
export function fmtCv(cv) {
  if (!finite(cv)) return "-";
  return `${(cv * 100).toFixed(cv * 100 >= 10 ? 1 : 2)}%`;
}

// Throughput: "1,234 samples/s", "56.7 samples/s", "0.512 samples/s".
export function fmtThroughput(perS) {
  if (!finite(perS)) return "-";
  return `${Math.abs(perS) >= 100 ? fmtCount(perS) : significant(perS, 3)} samples/s`;
}

// One telemetry value, its unit read from its key's suffix as the agents name them
// (compile_ms, host_ms_per_iteration, export_s, peak_rss_bytes, memory_mb, before_sm_clock_mhz,
// after_temperature_c, after_power_w, after_throttle_reasons, ..._per_s), a before/after
// prefix or suffix aside. Strings and booleans as they are; numbers without a known unit grouped
// or to four significant digits.
export function fmtTelemetry(key, value) {
  if (value === null || value === undefined) return "null";
  if (typeof value !== "number") return typeof value === "object" ? JSON.stringify(value) : String(value);
  if (!Number.isFinite(value)) return String(value);
  const k = key.toLowerCase().replace(/^(before|after)_/, "").replace(/_(before|after)$/, "");
  if (/(^|_)ms($|_per_)/.test(k)) return fmtDuration(value);
  if (/(^|_)s$/.test(k) && !/_per_s$/.test(k)) return fmtDuration(value * 1000);
  if (/_per_s$/.test(k)) return fmtThroughput(value);
  if (/_bytes$/.test(k)) return `${fmtBytes(value)}`;
  if (/_mb$/.test(k)) return fmtMiB(value);
  if (/_mhz$/.test(k)) return `${fmtCount(value)} MHz`;
  if (/(^|_)temperature_c$/.test(k)) return `${fmtFigure(value)} °C`;
  if (/(^|_)power_w$/.test(k)) return `${significant(value, 4)} W`;
  if (/_reasons$/.test(k) && Number.isInteger(value)) return value === 0 ? "0 (none)" : `0x${value.toString(16)}`;
  if (/(^|_)(cv)$/.test(k)) return fmtCv(value);
  if (/_(pct|percent)$/.test(k)) return `${fmtFigure(value)}%`;
  return fmtFigure(value);
}
