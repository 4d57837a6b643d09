// The shell command that measures one cell again: a one-cell matrix file (same model, batch,
// mode, build, GPU class, runtime and measurement settings as the run) submitted with the CLI.
// Pure, tested in node.
//
//   reproduceCommand(resultRow.job, run.matrix, { url: "http://coord:8080", runId: 5, resultId: 12 })

export function reproduceCommand(job, matrix, { url, runId, resultId }) {
  const file = `benchfleet-run${runId}-result${resultId}.yaml`;
  const lines = [
    `name: ${yamlString(`reproduce run ${runId} result ${resultId}`)}`,
    `models: [${yamlString(job.model)}]`,
    `batch_sizes: [${job.batch}]`,
    `modes: [${yamlString(job.mode)}]`,
    `torch_builds: [${yamlString(job.torch_build)}]`,
    `gpus: [${yamlString(job.gpu)}]`,
    `runtimes: [${yamlString(job.runtime)}]`,
  ];
  const m = matrix?.measurement;
  if (m) {
    lines.push("measurement:");
    for (const key of ["warmup", "min_iterations", "max_iterations", "min_duration_s", "max_duration_s", "target_ci_rel_width"]) {
      if (m[key] !== undefined && m[key] !== null) lines.push(`  ${key}: ${yamlNumber(m[key])}`);
    }
  }
  if (matrix?.memory_limit_mb) lines.push(`memory_limit_mb: ${matrix.memory_limit_mb}`);
  if (matrix?.timeout_s) lines.push(`timeout_s: ${matrix.timeout_s}`);
  return [
    `cat > ${file} <<'EOF'`,
    ...lines,
    "EOF",
    `BENCHFLEET_URL=${url} benchfleet submit ${file} --wait`,
  ].join("\n");
}

// A double-quoted YAML scalar (JSON string syntax is valid YAML).
function yamlString(s) {
  return JSON.stringify(String(s));
}

// Numbers as YAML reads them back: integers stay integers, fractions keep their digits.
function yamlNumber(v) {
  return Number.isFinite(v) ? String(v) : "null";
}
