// The Slurm launcher's config (slurm/launcher_config.h) and batch script (slurm/sbatch_script.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "slurm/launcher_config.h"
#include "slurm/sbatch_script.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::slurm {
namespace {

constexpr const char* kFull = R"(
coordinator: http://coord.example:8080
api_token_file: /etc/benchfleet/read-token
poll_s: 20
max_submissions_per_minute: 3
state_dir: /var/lib/benchfleet-slurm
sbatch: /usr/local/bin/sbatch-wrapper
classes:
  - gpu_class: a100
    builds: [stable, nightly]
    partition: gpu
    gres: "gpu:a100:1"
    constraint: "a100&ib"
    account: proj42
    qos: normal
    time_limit: "1-02:00:00"
    cpus_per_task: 8
    mem: 64G
    max_allocations: 6
    signal_s: 240
    idle_exit_s: 90
    agent_command: "/opt/benchfleet/bin/benchfleet-agent --config /etc/benchfleet/agent.yaml"
    sbatch_options: ["--exclusive", "--mail-type=NONE"]
  - gpu_class: cpu
    agent_command: /opt/benchfleet/bin/benchfleet-agent
)";

// A valid config with `class_line` added to its only class.
std::string with_class_line(const std::string& class_line) {
  return "classes:\n  - gpu_class: cpu\n    agent_command: agent\n    " + class_line + "\n";
}

std::string error_field(const std::string& yaml) {
  auto r = parse_launcher_config(yaml, "test.yaml");
  return r.ok() ? std::string("<ok>") : r.error().field;
}

TEST(SlurmLauncherConfig, ReadsEveryKey) {
  auto r = parse_launcher_config(kFull, "test.yaml");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  const auto& c = *r;
  EXPECT_EQ(c.coordinator, "http://coord.example:8080");
  EXPECT_EQ(parse_launcher_config("coordinator: http://h:1/\n" + with_class_line("mem: 1G"), "t")->coordinator,
            "http://h:1");
  EXPECT_EQ(c.api_token_file, "/etc/benchfleet/read-token");
  EXPECT_EQ(c.poll_s, 20);
  EXPECT_EQ(c.max_submissions_per_minute, 3);
  EXPECT_EQ(c.state_dir, "/var/lib/benchfleet-slurm");
  EXPECT_EQ(c.sbatch, "/usr/local/bin/sbatch-wrapper");
  EXPECT_EQ(c.squeue, "squeue");
  ASSERT_EQ(c.classes.size(), 2u);
  const auto& a = c.classes[0];
  EXPECT_EQ(a.builds, (std::vector<std::string>{"stable", "nightly"}));
  EXPECT_EQ(a.gres, "gpu:a100:1");
  EXPECT_EQ(a.constraint, "a100&ib");
  EXPECT_EQ(a.time_limit, "1-02:00:00");
  EXPECT_EQ(a.cpus_per_task, 8);
  EXPECT_EQ(a.max_allocations, 6);
  EXPECT_EQ(a.signal_s, 240);
  EXPECT_EQ(a.idle_exit_s, 90);
  EXPECT_EQ(a.job_name, "benchfleet-a100");
  EXPECT_TRUE(a.counts_build("nightly"));
  EXPECT_FALSE(a.counts_build("debian12"));
  EXPECT_EQ(c.find_class("cpu"), &c.classes[1]);
  EXPECT_EQ(c.find_class("v100"), nullptr);
}

TEST(SlurmLauncherConfig, DefaultsFollowTheContract) {
  auto r = parse_launcher_config("classes:\n  - gpu_class: cpu\n    agent_command: agent\n", "test.yaml");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->coordinator, "http://127.0.0.1:8080");
  EXPECT_EQ(r->poll_s, 15);
  EXPECT_EQ(r->max_submissions_per_minute, 4);
  EXPECT_EQ(r->state_dir, (std::filesystem::current_path() / "benchfleet-slurm").string());
  EXPECT_EQ(r->sacct, "sacct");
  EXPECT_EQ(r->scontrol, "scontrol");
  const auto& c = r->classes[0];
  EXPECT_TRUE(c.builds.empty());
  EXPECT_TRUE(c.counts_build("anything"));
  EXPECT_EQ(c.time_limit, "02:00:00");
  EXPECT_EQ(c.max_allocations, 4);
  EXPECT_EQ(c.signal_s, 300);
  EXPECT_EQ(c.idle_exit_s, 120);
  EXPECT_EQ(c.cpus_per_task, 0);
  EXPECT_EQ(c.job_name, "benchfleet-cpu");
}

TEST(SlurmLauncherConfig, ErrorsNameTheKey) {
  EXPECT_EQ(error_field("poll_s: 0\n" + with_class_line("mem: 1G")), "poll_s");
  EXPECT_EQ(error_field("poll_s: often\n" + with_class_line("mem: 1G")), "poll_s");
  EXPECT_EQ(error_field("max_submissions_per_minute: 0\n" + with_class_line("mem: 1G")), "max_submissions_per_minute");
  EXPECT_EQ(error_field("coordinator: https://x\n" + with_class_line("mem: 1G")), "coordinator");
  EXPECT_EQ(error_field("colour: red\n" + with_class_line("mem: 1G")), "colour");
  EXPECT_EQ(error_field("squeue: \"\"\n" + with_class_line("mem: 1G")), "squeue");
  EXPECT_EQ(error_field("poll_s: 5\n"), "classes");
  EXPECT_EQ(error_field("classes: cpu\n"), "classes");
  EXPECT_EQ(error_field(with_class_line("max_allocations: 0")), "classes[0].max_allocations");
  EXPECT_EQ(error_field(with_class_line("time_limit: two hours")), "classes[0].time_limit");
  EXPECT_EQ(error_field(with_class_line("time_limit: \"1:2:3:4\"")), "classes[0].time_limit");
  EXPECT_EQ(error_field(with_class_line("gres: [1, 2]")), "classes[0].gres");
  EXPECT_EQ(error_field(with_class_line("gres: gpu:a100 1")), "classes[0].gres");
  EXPECT_EQ(error_field(with_class_line("partitoin: gpu")), "classes[0].partitoin");
  EXPECT_EQ(error_field(with_class_line("builds: stable")), "classes[0].builds");
  EXPECT_EQ(error_field(with_class_line("sbatch_options: [exclusive]")), "classes[0].sbatch_options[0]");
  EXPECT_EQ(error_field(with_class_line("job_name: a,b")), "classes[0].job_name");
  EXPECT_EQ(error_field(with_class_line("cpus_per_task: -1")), "classes[0].cpus_per_task");
  EXPECT_EQ(error_field(with_class_line("time_limit: \"5\"")), "classes[0].signal_s");  // 300 s >= 5 min
  EXPECT_EQ(error_field(with_class_line("time_limit: \"5:01\"")), "<ok>");
  EXPECT_EQ(error_field("classes:\n  - gpu_class: cpu\n    agent_command: \"  \"\n"), "classes[0].agent_command");
  EXPECT_EQ(error_field("classes:\n  - gpu_class: cpu\n"), "classes[0].agent_command");
  EXPECT_EQ(error_field("classes:\n  - agent_command: a\n"), "classes[0].gpu_class");
  EXPECT_EQ(error_field("classes:\n  - gpu_class: A100\n    agent_command: a\n"), "classes[0].gpu_class");
  EXPECT_EQ(
      error_field("classes:\n  - gpu_class: cpu\n    agent_command: a\n  - gpu_class: cpu\n    agent_command: b\n"),
      "classes[1].gpu_class");
  EXPECT_EQ(error_field("classes:\n  - gpu_class: cpu\n    agent_command: a\n"
                        "  - gpu_class: v100\n    job_name: benchfleet-cpu\n    agent_command: b\n"),
            "classes[1].job_name");
  EXPECT_EQ(error_field("classes: [1]\n"), "classes[0]");
  auto r = parse_launcher_config(with_class_line("max_allocations: 0"), "test.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().describe(), "classes[0].max_allocations: must be >= 1");
}

TEST(SlurmLauncherConfig, MissingOrMalformedFile) {
  auto r = load_launcher_config("/nonexistent/launcher.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().field, "config");
  EXPECT_NE(r.error().message.find("/nonexistent/launcher.yaml"), std::string::npos);
  EXPECT_FALSE(parse_launcher_config("classes: [", "test.yaml").ok());
  EXPECT_FALSE(parse_launcher_config("- a\n- b\n", "test.yaml").ok());

  const testing::TempDir tmp("slurm_config_test");
  const auto path = tmp.path() / "launcher.yaml";
  {
    std::ofstream out(path);
    out << kFull;
  }
  auto loaded = load_launcher_config(path.string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  EXPECT_EQ(loaded->classes.size(), 2u);
}

TEST(SlurmTimeLimit, AcceptsSlurmFormats) {
  EXPECT_EQ(parse_slurm_time_limit("30"), 1800);
  EXPECT_EQ(parse_slurm_time_limit("30:15"), 1815);
  EXPECT_EQ(parse_slurm_time_limit("02:00:00"), 7200);
  EXPECT_EQ(parse_slurm_time_limit("1-12"), 86400 + 12 * 3600);
  EXPECT_EQ(parse_slurm_time_limit("1-12:30"), 86400 + 12 * 3600 + 1800);
  EXPECT_EQ(parse_slurm_time_limit("2-00:00:10"), 2 * 86400 + 10);
  EXPECT_EQ(parse_slurm_time_limit("UNLIMITED"), 0);
  EXPECT_EQ(parse_slurm_time_limit("0"), 0);
  for (const char* bad : {"", "1:2:3:4", "1-", "-1", "a", "1h", "1-2:3:4:5", "1:", ":1", "1--2", "12345678901"}) {
    EXPECT_FALSE(parse_slurm_time_limit(bad).has_value()) << bad;
  }
}

TEST(SbatchScript, HasEveryGivenOptionAndExecsTheAgent) {
  auto r = parse_launcher_config(kFull, "test.yaml");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(render_sbatch_script(*r, r->classes[0]),
            "#!/bin/bash\n"
            "# benchfleet agent allocation for GPU class a100 (benchfleet-slurm-launcher)\n"
            "#SBATCH --job-name=benchfleet-a100\n"
            "#SBATCH --partition=gpu\n"
            "#SBATCH --gres=gpu:a100:1\n"
            "#SBATCH --constraint=a100&ib\n"
            "#SBATCH --account=proj42\n"
            "#SBATCH --qos=normal\n"
            "#SBATCH --time=1-02:00:00\n"
            "#SBATCH --cpus-per-task=8\n"
            "#SBATCH --mem=64G\n"
            "#SBATCH --signal=B:TERM@240\n"
            "#SBATCH --output=/var/lib/benchfleet-slurm/logs/slurm-%A_%a.out\n"
            "#SBATCH --no-requeue\n"
            "#SBATCH --exclusive\n"
            "#SBATCH --mail-type=NONE\n"
            "exec /opt/benchfleet/bin/benchfleet-agent --config /etc/benchfleet/agent.yaml --allocation slurm "
            "--idle-exit-s 90\n");
  // Options left empty are not given to sbatch.
  const auto cpu = render_sbatch_script(*r, r->classes[1]);
  EXPECT_EQ(cpu.find("--partition"), std::string::npos);
  EXPECT_EQ(cpu.find("--gres"), std::string::npos);
  EXPECT_EQ(cpu.find("--cpus-per-task"), std::string::npos);
  EXPECT_NE(cpu.find("#SBATCH --time=02:00:00\n"), std::string::npos);
  EXPECT_NE(cpu.find("\nexec /opt/benchfleet/bin/benchfleet-agent --allocation slurm --idle-exit-s 120\n"),
            std::string::npos);
}

}  // namespace
}  // namespace benchfleet::slurm
