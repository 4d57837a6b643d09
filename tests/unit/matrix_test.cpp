#include "common/matrix.h"

#include <gtest/gtest.h>

namespace benchfleet {
namespace {

Catalog test_catalog() {
  auto c = Catalog::parse(R"(
models:
  - {id: a/one, source: torchvision, task: Image Classification, name: One, architecture: resnet18}
  - {id: a/two, source: torchvision, task: Image Classification, name: Two, architecture: resnet18}
)",
                          "test");
  EXPECT_TRUE(c.ok()) << c.error().describe();
  return std::move(c).value();
}

MatrixSpec spec() {
  MatrixSpec s;
  s.name = "t";
  s.models = {"a/two", "a/one"};
  s.batch_sizes = {16, 1, 4};
  s.modes = {Mode::kEager, Mode::kDefault};
  s.torch_builds = {"stable", "nightly"};
  s.gpus = {"a100"};
  return s;
}

TEST(ExpandMatrix, OneJobPerCellAndRepetitionInSchedulingOrder) {
  auto s = spec();
  s.repetitions = 2;
  auto jobs = expand_matrix(s, test_catalog(), {});
  ASSERT_TRUE(jobs.ok()) << jobs.error().describe();
  ASSERT_EQ(jobs->size(), 2u * 3 * 2 * 2 * 2);
  // Modes innermost, batches ascending, models in matrix order, repetition outermost.
  EXPECT_EQ((*jobs)[0], (JobSpec{"a/two", 1, Mode::kEager, "stable", "a100", Runtime::kLibtorch, 0}));
  EXPECT_EQ((*jobs)[1], (JobSpec{"a/two", 1, Mode::kDefault, "stable", "a100", Runtime::kLibtorch, 0}));
  EXPECT_EQ((*jobs)[2].batch, 4);
  EXPECT_EQ((*jobs)[6].model, "a/one");
  EXPECT_EQ(jobs->back().repetition, 1);
  std::set<std::tuple<std::string, int, Mode, std::string, int>> unique;
  for (const auto& j : *jobs) unique.emplace(j.model, j.batch, j.mode, j.torch_build, j.repetition);
  EXPECT_EQ(unique.size(), jobs->size());
}

TEST(ExpandMatrix, DtypesSitBetweenBatchAndMode) {
  auto s = spec();
  s.torch_builds = {"stable"};
  s.models = {"a/one"};
  s.dtypes = {Dtype::kFloat16, Dtype::kFloat32};
  auto jobs = expand_matrix(s, test_catalog(), {});
  ASSERT_TRUE(jobs.ok()) << jobs.error().describe();
  ASSERT_EQ(jobs->size(), 3u * 2 * 2);
  // The modes of one (batch, dtype) sit together; a batch's dtypes before the next batch.
  const auto at = [&](std::size_t i) { return std::tuple((*jobs)[i].batch, (*jobs)[i].dtype, (*jobs)[i].mode); };
  EXPECT_EQ(at(0), std::tuple(1, Dtype::kFloat16, Mode::kEager));
  EXPECT_EQ(at(1), std::tuple(1, Dtype::kFloat16, Mode::kDefault));
  EXPECT_EQ(at(2), std::tuple(1, Dtype::kFloat32, Mode::kEager));
  EXPECT_EQ(at(4), std::tuple(4, Dtype::kFloat16, Mode::kEager));
  // The cap counts the dtypes.
  auto capped = expand_matrix(s, test_catalog(), ExpansionLimits{11});
  ASSERT_FALSE(capped.ok());
  EXPECT_NE(capped.error().message.find("x dtypes x"), std::string::npos) << capped.error().message;
}

TEST(ExpandMatrix, UnknownModelNamesTheIndex) {
  auto s = spec();
  s.models = {"a/one", "nope/nothing"};
  auto jobs = expand_matrix(s, test_catalog(), {});
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.error().field, "models[1]");
  EXPECT_NE(jobs.error().message.find("nope/nothing"), std::string::npos);
}

TEST(ExpandMatrix, CellCapIsEnforced) {
  auto jobs = expand_matrix(spec(), test_catalog(), ExpansionLimits{23});
  ASSERT_FALSE(jobs.ok());
  EXPECT_NE(jobs.error().message.find("24 jobs"), std::string::npos) << jobs.error().message;
  EXPECT_TRUE(expand_matrix(spec(), test_catalog(), ExpansionLimits{24}).ok());
}

// The shape walk's bound holds wherever a matrix is expanded: a submit and each firing of a
// schedule alike.
TEST(ExpandMatrix, AShapeWalkHasAtMost64BatchSizes) {
  MatrixSpec walk = spec();
  walk.shape_walk = true;
  walk.batch_sizes.clear();
  for (int b = 1; b <= 65; ++b) walk.batch_sizes.push_back(b);
  auto jobs = expand_matrix(walk, test_catalog(), {});
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.error().field, "batch_sizes");
  EXPECT_NE(jobs.error().message.find("at most 64"), std::string::npos) << jobs.error().message;
  walk.batch_sizes.pop_back();
  EXPECT_TRUE(expand_matrix(walk, test_catalog(), {}).ok());
  walk.shape_walk = false;
  walk.batch_sizes.push_back(65);
  EXPECT_TRUE(expand_matrix(walk, test_catalog(), {}).ok()) << "no walk: no bound but the cells'";
}

TEST(GroupKey, DiffersOnlyByModeShareAGroup) {
  JobSpec a{"m", 4, Mode::kEager, "stable", "a100", Runtime::kLibtorch, 0};
  JobSpec b = a;
  b.mode = Mode::kReduceOverhead;
  EXPECT_EQ(group_key(1, a), group_key(1, b));
  b.batch = 8;
  EXPECT_NE(group_key(1, a), group_key(1, b));
  EXPECT_NE(group_key(1, a), group_key(2, a));
}

// A group compares modes on one device in one precision: another dtype is another group.
TEST(GroupKey, EachDtypeIsItsOwnGroup) {
  JobSpec a{"m", 4, Mode::kEager, "stable", "a100", Runtime::kLibtorch, 0};
  JobSpec b = a;
  b.mode = Mode::kDefault;
  b.dtype = Dtype::kBfloat16;
  EXPECT_NE(group_key(1, a), group_key(1, b));
  a.dtype = Dtype::kBfloat16;
  EXPECT_EQ(group_key(1, a), group_key(1, b));
}

}  // namespace
}  // namespace benchfleet
