// Pure computations behind the charts: the histogram of a result's samples and the improvement
// over eager. (A comparison of two sides is the coordinator's, tables and geomeans included:
// GET /compare, drawn as it comes by views/compare.js.) Tested in node.

// Equal-width histogram of `samples` (ms): k = clamp(ceil(sqrt(n)), 5, 40) bins over [min, max].
//   -> {edges: [k + 1 numbers], counts: [k numbers]}
export function histogram(samples, maxBins = 40) {
  const n = samples.length;
  if (n === 0) return { edges: [], counts: [] };
  let min = Infinity;
  let max = -Infinity;
  for (const v of samples) { if (v < min) min = v; if (v > max) max = v; }
  if (min === max) return { edges: [min, max], counts: [n] };
  const k = Math.max(5, Math.min(maxBins, Math.ceil(Math.sqrt(n))));
  const width = (max - min) / k;
  const counts = new Array(k).fill(0);
  for (const v of samples) counts[Math.min(k - 1, Math.floor((v - min) / width))]++;
  const edges = Array.from({ length: k + 1 }, (_, i) => min + i * width);
  return { edges, counts };
}

// Percentage of eager's time a compiled mode saves: speedup 1.25x -> 20%.
export function improvementPercent(speedup) {
  return Number.isFinite(speedup) && speedup > 0 ? (1 - 1 / speedup) * 100 : null;
}
