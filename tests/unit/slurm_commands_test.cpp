// The Slurm command layer (slurm/slurm_commands.h, slurm/command_runner.h): the parsers over
// real-format output of Slurm 22.05, the command lines given to Slurm, and the process runner
// with real processes (exit status, output, timeout, missing program).
#include <gtest/gtest.h>

#include <chrono>

#include "slurm/command_runner.h"
#include "slurm/slurm_commands.h"

namespace benchfleet::slurm {
namespace {

using std::chrono::milliseconds;

TEST(SlurmParsers, SbatchParsable) {
  EXPECT_EQ(*parse_sbatch_parsable("123\n"), "123");
  EXPECT_EQ(*parse_sbatch_parsable("4567;cluster1\n"), "4567");
  EXPECT_EQ(*parse_sbatch_parsable("sbatch: warning: something\n88\n"), "88");
  EXPECT_FALSE(parse_sbatch_parsable("").ok());
  EXPECT_FALSE(parse_sbatch_parsable("Submitted batch job 12\n").ok());
  EXPECT_FALSE(parse_sbatch_parsable(";x\n").ok());
}

TEST(SlurmParsers, Squeue) {
  // squeue -h -r -o '%i|%T|%j|%N|%r'
  auto r = parse_squeue(
      "105_0|RUNNING|benchfleet-cpu|node1|None\n"
      "105_1|PENDING|benchfleet-cpu||Resources\n"
      "106|PENDING|benchfleet-a100||(Priority)\n"
      "104|COMPLETING|benchfleet-cpu|node1|NonZeroExitCode\n");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0].job_id, "105_0");
  EXPECT_EQ((*r)[0].state, "RUNNING");
  EXPECT_EQ((*r)[0].name, "benchfleet-cpu");
  EXPECT_EQ((*r)[0].node, "node1");
  EXPECT_EQ((*r)[0].reason, "");
  EXPECT_EQ((*r)[1].node, "");
  EXPECT_EQ((*r)[1].reason, "Resources");
  EXPECT_EQ((*r)[2].job_id, "106");
  EXPECT_EQ((*r)[3].state, "COMPLETING");
  EXPECT_TRUE(parse_squeue("").value().empty());
  EXPECT_FALSE(parse_squeue("105_0|RUNNING|benchfleet-cpu|node1\n").ok());
  EXPECT_FALSE(parse_squeue("JOBID|STATE|NAME|NODELIST|REASON\n").ok());  // a header: -h missing
  EXPECT_FALSE(parse_squeue("12||n||\n").ok());
}

TEST(SlurmParsers, Sacct) {
  // sacct -X -n -P -o JobID,State,Start,End,ExitCode
  auto r = parse_sacct(
      "104|COMPLETED|2026-11-25T12:00:01|2026-11-25T12:05:40|0:0\n"
      "105_0|CANCELLED by 0|2026-11-25T12:01:00|2026-11-25T12:02:00|0:15\n"
      "105_[2-3]|PENDING|Unknown|Unknown|0:0\n"
      "107|TIMEOUT|2026-11-25T12:00:01|2026-11-25T12:10:02|0:0\n"
      "108|NODE_FAIL|2026-11-25T12:00:01|None|1:0\n");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ(r->size(), 5u);
  EXPECT_EQ((*r)[0].state, "COMPLETED");
  EXPECT_EQ((*r)[0].start, "2026-11-25T12:00:01");
  EXPECT_EQ((*r)[0].end, "2026-11-25T12:05:40");
  EXPECT_EQ((*r)[1].job_id, "105_0");
  EXPECT_EQ((*r)[1].state, "CANCELLED");
  EXPECT_EQ((*r)[1].reason, "by 0");
  EXPECT_EQ((*r)[1].exit_code, "0:15");
  EXPECT_EQ((*r)[2].job_id, "105_[2-3]");
  EXPECT_EQ((*r)[2].start, "");
  EXPECT_EQ((*r)[3].state, "TIMEOUT");
  EXPECT_EQ((*r)[4].end, "");
  EXPECT_FALSE(parse_sacct("104|COMPLETED|x|y\n").ok());
  EXPECT_FALSE(parse_sacct("JobID|State|Start|End|ExitCode\n").ok());
}

TEST(SlurmParsers, ScontrolShowJob) {
  const std::string array_task =
      "JobId=5 ArrayJobId=4 ArrayTaskId=1 JobName=benchfleet-cpu UserId=root(0) GroupId=root(0) MCS_label=N/A "
      "Priority=4294901757 Nice=0 Account=(null) QOS=(null) JobState=CANCELLED Reason=Resources Dependency=(null) "
      "Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15 RunTime=00:00:05 TimeLimit=00:10:00 TimeMin=N/A "
      "SubmitTime=2026-11-25T12:00:00 EligibleTime=2026-11-25T12:00:00 AccrueTime=2026-11-25T12:00:00 "
      "StartTime=2026-11-25T12:00:01 EndTime=2026-11-25T12:00:06 Deadline=N/A SuspendTime=None SecsPreSuspend=0 "
      "Partition=debug AllocNode:Sid=localhost:123 ReqNodeList=(null) ExcNodeList=(null) NodeList=node1 "
      "BatchHost=node1 NumNodes=1 NumCPUs=1 TRES=cpu=1,node=1,billing=1 Command=/tmp/x/scripts/cpu.sh "
      "WorkDir=/tmp StdOut=/tmp/x/logs/slurm-4_1.out Power=\n";
  const std::string plain =
      "JobId=9 JobName=benchfleet-a100 UserId=bench(1000) JobState=PENDING Reason=Priority ExitCode=0:0 "
      "StartTime=Unknown EndTime=Unknown NodeList=(null) Partition=gpu\n";
  auto r = parse_scontrol_jobs(array_task + plain);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].job_id, "4_1");
  EXPECT_EQ((*r)[0].state, "CANCELLED");
  EXPECT_EQ((*r)[0].reason, "");
  EXPECT_EQ((*r)[0].name, "benchfleet-cpu");
  EXPECT_EQ((*r)[0].node, "node1");
  EXPECT_EQ((*r)[0].exit_code, "0:15");
  EXPECT_EQ((*r)[0].start, "2026-11-25T12:00:01");
  EXPECT_EQ((*r)[1].job_id, "9");
  EXPECT_EQ((*r)[1].state, "PENDING");
  EXPECT_EQ((*r)[1].reason, "Priority");
  EXPECT_EQ((*r)[1].node, "");
  EXPECT_EQ((*r)[1].start, "");
  EXPECT_FALSE(parse_scontrol_jobs("No jobs in the system\n").ok());
}

TEST(SlurmParsers, FinalStates) {
  for (const char* s : {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY"}) {
    EXPECT_TRUE(is_final_state(s)) << s;
  }
  for (const char* s : {"PENDING", "RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING", "REQUEUED", ""}) {
    EXPECT_FALSE(is_final_state(s)) << s;
  }
}

// Answers every command with one canned output and remembers the command lines.
class CannedRunner final : public CommandRunner {
 public:
  CommandOutput answer;
  std::vector<std::vector<std::string>> calls;
  Result<CommandOutput> run(const std::vector<std::string>& argv, milliseconds) override {
    calls.push_back(argv);
    return answer;
  }
};

LauncherConfig commands_config() {
  LauncherConfig c;
  c.sbatch = "/opt/slurm/bin/sbatch";
  return c;
}

TEST(SlurmCommands, CommandLines) {
  const auto config = commands_config();
  CannedRunner runner;
  SlurmCommands slurm(config, runner);
  runner.answer.exit_code = 0;
  runner.answer.out = "77;c1\n";
  EXPECT_EQ(*slurm.submit("/s/scripts/cpu.sh", 1), "77");
  EXPECT_EQ(*slurm.submit("/s/scripts/cpu.sh", 3), "77");
  runner.answer.out = "77_0|RUNNING|benchfleet-cpu|node1|None\n";
  EXPECT_EQ(slurm.list({"benchfleet-cpu", "benchfleet-a100"})->size(), 1u);
  runner.answer.out = "77_0|COMPLETED|2026-11-25T12:00:01|2026-11-25T12:05:40|0:0\n";
  EXPECT_EQ(slurm.account({"77_0", "78"})->size(), 1u);
  ASSERT_EQ(runner.calls.size(), 4u);
  EXPECT_EQ(runner.calls[0], (std::vector<std::string>{"/opt/slurm/bin/sbatch", "--parsable", "/s/scripts/cpu.sh"}));
  EXPECT_EQ(runner.calls[1],
            (std::vector<std::string>{"/opt/slurm/bin/sbatch", "--parsable", "--array=0-2", "/s/scripts/cpu.sh"}));
  EXPECT_EQ(runner.calls[2],
            (std::vector<std::string>{"squeue", "-h", "-r", "--me", "--name=benchfleet-cpu,benchfleet-a100", "-o",
                                      "%i|%T|%j|%N|%r"}));
  EXPECT_EQ(runner.calls[3], (std::vector<std::string>{"sacct", "-X", "-n", "-P", "-o",
                                                       "JobID,State,Start,End,ExitCode", "-j", "77_0,78"}));
}

TEST(SlurmCommands, FailuresSayWhy) {
  const auto config = commands_config();
  CannedRunner runner;
  SlurmCommands slurm(config, runner);
  runner.answer.exit_code = 1;
  runner.answer.err = "sbatch: error: Batch job submission failed: Invalid partition name specified\n";
  auto r = slurm.submit("/s/cpu.sh", 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("Invalid partition name specified"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("/opt/slurm/bin/sbatch --parsable /s/cpu.sh"), std::string::npos);
  runner.answer.err = "sacct: error: Slurm accounting storage is disabled\n";
  EXPECT_FALSE(slurm.account({"1"}).ok());
  // scontrol: a job slurmctld has forgotten is no job, not an error.
  runner.answer.err = "slurm_load_jobs error: Invalid job id specified\n";
  auto shown = slurm.show("12");
  ASSERT_TRUE(shown.ok());
  EXPECT_FALSE(shown->has_value());
  runner.answer.err = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n";
  EXPECT_FALSE(slurm.show("12").ok());
  runner.answer.exit_code = 0;
  runner.answer.err.clear();
  runner.answer.out = "JobId=12 JobName=benchfleet-cpu JobState=TIMEOUT Reason=TimeLimit NodeList=n3 ExitCode=0:0\n";
  shown = slurm.show("12");
  ASSERT_TRUE(shown.ok() && shown->has_value());
  EXPECT_EQ((*shown)->state, "TIMEOUT");
  EXPECT_EQ((*shown)->reason, "TimeLimit");
}

TEST(ProcessRunner, CapturesOutputAndExitStatus) {
  ProcessRunner runner;
  auto r = runner.run({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, milliseconds(10'000));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->describe_failure(), "exit status 3: err");
  r = runner.run({"sh", "-c", "kill -TERM $$"}, milliseconds(10'000));  // found on PATH
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->signal, 15);
  EXPECT_FALSE(r->succeeded());
}

TEST(ProcessRunner, BoundsOutput) {
  ProcessRunner runner(1000);
  auto r = runner.run({"/bin/sh", "-c", "head -c 100000 /dev/zero"}, milliseconds(10'000));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->out.size(), 1000u);
  EXPECT_EQ(r->exit_code, 0);
}

TEST(ProcessRunner, KillsWhatRunsPastTheTimeout) {
  ProcessRunner runner;
  const auto start = std::chrono::steady_clock::now();
  // The shell's child (sleep) holds the pipes too: the whole group must die.
  auto r = runner.run({"/bin/sh", "-c", "sleep 30; echo late"}, milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find("did not finish within 300 ms"), std::string::npos) << r.error().message;
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST(ProcessRunner, MissingProgram) {
  ProcessRunner runner;
  auto r = runner.run({"/nonexistent/sbatch", "--parsable"}, milliseconds(1000));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("cannot start /nonexistent/sbatch: "), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace benchfleet::slurm
