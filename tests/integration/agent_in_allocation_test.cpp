// Integration: the real benchfleet-agent in allocation mode (--allocation slurm) against
// the real coordinator, without Slurm: the agent runs in a Slurm job's environment
// (SLURM_JOB_ID=4242, SLURM_CLUSTER_NAME=it, no --name) and the `squeue` first on its PATH is a
// script of this test printing the time left (the agent's default squeue, found on PATH as in a
// real batch job). It enrols as slurm-it-4242, exits 0 by itself when idle, takes no job
// it cannot finish in the time left (the job stays queued, its attempt unused), and runs and
// reports one that fits. (The real Slurm cluster: tests/slurm.)
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/integration/agent_test_util.h"

namespace benchfleet::testing {
namespace {

namespace fs = std::filesystem;

class AgentInAllocation : public ::testing::Test {
 protected:
  // An agent of `coord` as sbatch would start it: the Slurm variables set, --name dropped (the
  // name comes from the job), the squeue on its PATH answering `time_left` for job 4242 only.
  AgentOptions slurm_agent(const CoordinatorProcess& coord, const std::string& time_left,
                           std::vector<std::string> extra_args) {
    const std::string& dir = coord.dir();
    std::ofstream(dir + "/time-left") << time_left << "\n";
    squeue_calls_ = dir + "/squeue-calls";
    fs::create_directories(dir + "/slurm-bin");
    const std::string squeue = dir + "/slurm-bin/squeue";
    std::ofstream(squeue) << "#!/bin/sh\n"
                          << "echo \"$*\" >> " << squeue_calls_ << "\n"
                          << "[ \"$*\" = \"-h -j 4242 -o %L\" ] || { echo \"unexpected: $*\" >&2; exit 1; }\n"
                          << "cat " << dir << "/time-left\n";
    fs::permissions(squeue, fs::perms::owner_all);
    const std::string in_job = dir + "/in-slurm-job";
    std::ofstream(in_job) << "#!/bin/sh\n"
                          << "export SLURM_JOB_ID=4242 SLURM_CLUSTER_NAME=it PATH=" << dir << "/slurm-bin:$PATH\n"
                          << "skip=0\n"
                          << "for a in \"$@\"; do\n"
                          << "  shift\n"
                          << "  if [ $skip = 1 ]; then skip=0; continue; fi\n"
                          << "  if [ \"$a\" = --name ]; then skip=1; continue; fi\n"
                          << "  set -- \"$@\" \"$a\"\n"
                          << "done\n"
                          << "exec \"$@\"\n";
    fs::permissions(in_job, fs::perms::owner_all);
    AgentOptions o = agent_options(coord, "slurm-it-4242");
    o.wrapper = {"/bin/sh", in_job};
    o.extra_args = {"--allocation", "slurm"};
    o.extra_args.insert(o.extra_args.end(), extra_args.begin(), extra_args.end());
    return o;
  }

  std::string squeue_calls() const {
    std::ifstream in(squeue_calls_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  std::string squeue_calls_;
};

TEST_F(AgentInAllocation, EnrolsUnderTheSlurmJobsNameAndExitsZeroWhenIdle) {
  CoordinatorProcess coord({BENCHFLEET_FAST_LEASES});
  AgentProcess agent(slurm_agent(coord, "2:00:00", {"--idle-exit-s", "2"}));
  agent.start();
  ASSERT_TRUE(wait_online(coord, {"slurm-it-4242"})) << agents_of(coord).dump(1);
  const json listed = agent_named(coord, "slurm-it-4242");
  EXPECT_EQ(listed["slots"][0].value("gpu_class", ""), "cpu") << listed.dump();

  const auto status = agent.wait_exit(60s);
  ASSERT_TRUE(status.has_value()) << "the idle agent did not exit";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << *status;
  EXPECT_NE(agent.log().find("exiting: idle for "), std::string::npos) << agent.log_tail();
  EXPECT_NE(agent.log().find("; ran 0 job(s)"), std::string::npos) << agent.log_tail();
  EXPECT_NE(squeue_calls().find("-h -j 4242 -o %L"), std::string::npos);
  // A clean exit with nothing spooled: the allocation's own directory is gone, the shared
  // artifact cache stays.
  EXPECT_FALSE(fs::exists(agent.state_dir() + "/slurm-it-4242"));
  EXPECT_TRUE(fs::exists(agent.state_dir() + "/artifacts"));
}

TEST_F(AgentInAllocation, TakesNoJobItCannotFinishInTheTimeLeftAndExitsBeforeTheEnd) {
  CoordinatorProcess coord({BENCHFLEET_FAST_LEASES});
  // 10 minutes of timeout with 90 s left: it cannot fit (no duration measured yet).
  const json run = coord.submit(cpu_matrix({kMobilenet}, {1}, {"eager"}, "local", 600));
  ASSERT_EQ(run["job_count"], 1);
  AgentProcess agent(slurm_agent(coord, "01:30", {}));
  const auto started = std::chrono::steady_clock::now();
  agent.start();

  const auto status = agent.wait_exit(80s);
  ASSERT_TRUE(status.has_value()) << "the agent did not exit before the allocation's end\n" << agent.log_tail();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << *status;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 90s);
  EXPECT_NE(agent.log().find("does not fit in the"), std::string::npos) << agent.log_tail();
  EXPECT_NE(agent.log().find("; ran 0 job(s)"), std::string::npos) << agent.log_tail();
  // Given back untouched: queued again, its attempt not used, and nothing ran.
  const json jobs = coord.get_json(run_url(run) + "/jobs").at("jobs");
  ASSERT_EQ(jobs.size(), 1u) << jobs.dump(1);
  EXPECT_EQ(jobs[0].value("status", ""), "queued") << jobs.dump(1);
  EXPECT_EQ(jobs[0].value("attempt", -1), 0) << jobs.dump(1);
  EXPECT_TRUE(results_of(coord, run).empty());
}

TEST_F(AgentInAllocation, RunsAJobThatFitsReadsTheTimeLeftAgainAndExitsWhenIdle) {
  CoordinatorProcess coord({BENCHFLEET_FAST_LEASES});
  const json run = coord.submit(cpu_matrix({kMobilenet}, {1}, {"eager"}, "local", 120));
  AgentProcess agent(slurm_agent(coord, "1-00:00:00", {"--idle-exit-s", "3"}));
  agent.start();

  ASSERT_TRUE(wait_run_state(coord, run, "done")) << run_of(coord, run).dump(1) << agent.log_tail();
  const auto status = agent.wait_exit(60s);
  ASSERT_TRUE(status.has_value()) << agent.log_tail();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << *status;
  const auto results = results_of(coord, run);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0]["result"].value("status", ""), "ok") << results[0].dump(1);
  EXPECT_EQ(results[0].value("agent", ""), "slurm-it-4242");
  EXPECT_NE(agent.log().find("; ran 1 job(s)"), std::string::npos) << agent.log_tail();
  // Read at the start and again after the job.
  const std::string calls = squeue_calls();
  EXPECT_NE(calls.find("-h -j 4242 -o %L\n-h -j 4242 -o %L"), std::string::npos) << calls;
}

}  // namespace
}  // namespace benchfleet::testing
