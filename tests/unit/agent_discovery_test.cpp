#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/daemon/gpu_discovery.h"
#include "agent/daemon/spool.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::agent {
namespace {

std::string recorded(const std::string& name) {
  std::ifstream in(std::string(BENCHFLEET_SOURCE_DIR) + "/tests/data/nvidia-smi/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(GpuDiscovery, RecordedHostsParseAndMapToTheirClass) {
  struct Case {
    const char* file;
    std::size_t gpus;
    const char* klass;
    std::int64_t memory_mb;
    const char* cc;
  };
  for (const Case& c : {Case{"a100-x2.csv", 2, "a100", 40960, "8.0"}, Case{"v100-x1.csv", 1, "v100", 16384, "7.0"},
                        Case{"t4-x1.csv", 1, "t4", 15360, "7.5"}, Case{"h100-x1.csv", 1, "h100", 81559, "9.0"}}) {
    auto gpus = parse_nvidia_smi(recorded(c.file));
    ASSERT_TRUE(gpus.ok()) << c.file << ": " << gpus.error().describe();
    ASSERT_EQ(gpus->size(), c.gpus) << c.file;
    EXPECT_EQ(gpu_class_for((*gpus)[0].name), c.klass) << c.file;
    EXPECT_EQ((*gpus)[0].memory_mb, c.memory_mb);
    EXPECT_EQ((*gpus)[0].compute_capability, c.cc);
    EXPECT_EQ((*gpus)[0].uuid.rfind("GPU-", 0), 0u);
    auto slots = slots_for(*gpus, {}, std::nullopt);
    ASSERT_EQ(slots.size(), c.gpus);
    EXPECT_EQ(slots[0].id, "gpu0");
    EXPECT_EQ(slots[0].gpu_class, c.klass);
  }
}

TEST(GpuDiscovery, ClassNames) {
  EXPECT_EQ(gpu_class_for("NVIDIA A100 80GB PCIe"), "a100");
  EXPECT_EQ(gpu_class_for("NVIDIA A10G"), "a10g");
  EXPECT_EQ(gpu_class_for("NVIDIA A10"), "a10");
  EXPECT_EQ(gpu_class_for("NVIDIA L4"), "l4");
  EXPECT_EQ(gpu_class_for("NVIDIA L40S"), "l40s");
  EXPECT_EQ(gpu_class_for("NVIDIA H200"), "h200");
  EXPECT_EQ(gpu_class_for("NVIDIA GH200 480GB"), "gh200");
  EXPECT_EQ(gpu_class_for("NVIDIA GeForce RTX 4090"), "geforce-rtx-4090");
  EXPECT_EQ(gpu_class_for("Quadro RTX 8000 (Rev. 2)"), "quadro-rtx-8000-rev-2");
  EXPECT_EQ(gpu_class_for(""), "gpu");
}

TEST(GpuDiscovery, SelectionAndCpuFallback) {
  auto gpus = parse_nvidia_smi(recorded("a100-x2.csv")).value();
  auto by_index = slots_for(gpus, {"1"}, 20000);
  ASSERT_EQ(by_index.size(), 1u);
  EXPECT_EQ(by_index[0].id, "gpu1");
  EXPECT_EQ(by_index[0].memory_limit_mb, 20000);
  auto by_uuid = slots_for(gpus, {gpus[0].uuid}, std::nullopt);
  ASSERT_EQ(by_uuid.size(), 1u);
  EXPECT_EQ(by_uuid[0].gpu->uuid, gpus[0].uuid);
  auto none = slots_for({}, {}, std::nullopt);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].id, "cpu");
  EXPECT_EQ(none[0].gpu_class, "cpu");
}

TEST(GpuDiscovery, MalformedOutputNamesTheLine) {
  auto r = parse_nvidia_smi("0, GPU-x, Tesla T4, 15360, 525.85.12, 7.5\ngarbage\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().field, "nvidia-smi line 2");
  EXPECT_TRUE(parse_nvidia_smi("").value().empty());
}

TEST(Spool, SurvivesReopenAndSetsCorruptEntriesAside) {
  namespace fs = std::filesystem;
  const testing::TempDir tmp("bf-spool");
  const fs::path dir = tmp.path() / "spool";
  {
    Spool spool(dir.string());
    ASSERT_TRUE(spool.open().ok());
    JobResult r;
    r.status = ResultStatus::kOom;
    r.oom = OomInfo{OomPhase::kWarmup, 1024};
    ASSERT_TRUE(spool.put({7, "lease-7", 2, r}).ok());
    r.status = ResultStatus::kError;
    r.oom.reset();
    r.error = "boom";
    ASSERT_TRUE(spool.put({3, "lease-3", 1, r}).ok());
  }
  std::ofstream(dir / "job-9-attempt-1.json") << "{not json";
  Spool again(dir.string());
  ASSERT_TRUE(again.open().ok());
  std::vector<std::string> skipped;
  auto entries = again.list(&skipped);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].job_id, 3);
  EXPECT_EQ(entries[1].job_id, 7);
  EXPECT_EQ(entries[1].lease_id, "lease-7");
  EXPECT_EQ(entries[1].result.oom->bytes_requested, 1024);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_TRUE(fs::exists(dir / "job-9-attempt-1.json.bad"));
  ASSERT_TRUE(again.remove(3, 1).ok());
  EXPECT_EQ(again.list().size(), 1u);
}

}  // namespace
}  // namespace benchfleet::agent
