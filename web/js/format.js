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
