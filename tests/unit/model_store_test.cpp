// Registered models in the store (coordinator/store/model_store.h) and the registry over it
// (coordinator/services/model_registry.h): the catalog registered at first start, versions that
// keep a definition with its results, removal and retirement, and artifacts' rows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/services/model_registry.h"
#include "tests/unit/store_fixture.h"

namespace benchfleet::store {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

class ModelStoreTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    registry_.emplace(store_->models(), std::vector<std::string>{"/srv/models"});
    auto shipped = Catalog::load_file(default_catalog_path());
    ASSERT_TRUE(shipped.ok());
    auto added = registry_->start(*shipped);
    ASSERT_TRUE(added.ok()) << added.error().message;
    EXPECT_EQ(*added, 15);
  }
  void TearDown() override {
    registry_.reset();
    StoreTest::TearDown();
  }
  static json regnet(const std::string& architecture = "regnet_y_400mf") {
    return {{"id", "acme/regnet"}, {"source", "torchvision"}, {"architecture", architecture}};
  }
  // Runs one job of `key` to a result.
  void measure(const std::string& key) {
    const std::int64_t agent = enroll("a1", "a100", {Mode::kEager});
    MatrixSpec spec = testing::stable_a100_matrix("m", {key}, {1}, {Mode::kEager});
    auto jobs = expand_matrix(spec, *registry_->catalog(), {});
    ASSERT_TRUE(jobs.ok()) << jobs.error().message;
    ASSERT_TRUE(store_->runs().create_run(spec, *jobs).ok());
    const LeaseGrant g = lease(agent);
    auto r = store_->results().record_result(agent, {g.job_id, g.lease_id}, g.attempt, ok_result(2));
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  std::optional<services::ModelRegistry> registry_;
};

TEST_F(ModelStoreTest, TheCatalogIsRegisteredOnceInItsOrder) {
  const auto catalog = registry_->catalog();
  ASSERT_EQ(catalog->models().size(), 15u);
  EXPECT_EQ(catalog->models().front().id, "google/vit-base-patch16-224");
  EXPECT_EQ(catalog->models().front().digest.rfind("sha256:", 0), 0u);
  auto shipped = Catalog::load_file(default_catalog_path());
  EXPECT_EQ(registry_->start(*shipped).value(), 0) << "a later start adds only ids the store lacks";
}

TEST_F(ModelStoreTest, SameDefinitionIsUnchangedAndAnotherReplacesOneWithoutResults) {
  auto first = registry_->add(regnet(), false);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->outcome, Registered::kCreated);
  EXPECT_EQ(registry_->add(regnet(), false)->outcome, Registered::kUnchanged);
  auto replaced = registry_->add(regnet("regnet_y_800mf"), false);
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(replaced->outcome, Registered::kReplaced);
  EXPECT_EQ(replaced->model.version, 1);
  EXPECT_EQ(registry_->catalog()->find("acme/regnet")->architecture, "regnet_y_800mf");
}

TEST_F(ModelStoreTest, ARedefinitionWithResultsNeedsANewVersionAndKeepsTheOld) {
  ASSERT_TRUE(registry_->add(regnet(), false).ok());
  measure("acme/regnet");
  auto refused = registry_->add(regnet("regnet_y_800mf"), false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kConflict);
  EXPECT_EQ(refused.error().field, "id");
  EXPECT_THAT(refused.error().message, HasSubstr("new_version"));
  EXPECT_EQ(registry_->catalog()->find("acme/regnet")->architecture, "regnet_y_400mf") << "nothing stored lost";

  auto v2 = registry_->add(regnet("regnet_y_800mf"), true);
  ASSERT_TRUE(v2.ok()) << v2.error().message;
  EXPECT_EQ(v2->outcome, Registered::kNewVersion);
  EXPECT_EQ(v2->model.key(), "acme/regnet@2");
  const auto catalog = registry_->catalog();
  EXPECT_EQ(catalog->resolve_id("acme/regnet", "m").value(), "acme/regnet@2") << "new runs get version 2";
  EXPECT_EQ(catalog->find("acme/regnet")->architecture, "regnet_y_400mf") << "version 1 stays with its results";
  EXPECT_FALSE(catalog->find("acme/regnet")->current);
  EXPECT_NE(catalog->find("acme/regnet")->digest, catalog->find("acme/regnet@2")->digest);
  EXPECT_EQ(store_->models().results_of("acme/regnet").value(), 1);
}

TEST_F(ModelStoreTest, RemovingOneWithResultsRetiresIt) {
  ASSERT_TRUE(registry_->add(regnet(), false).ok());
  ASSERT_TRUE(registry_->add({{"id", "acme/unused"}, {"source", "timm"}, {"architecture", "resnet50"}}, false).ok());
  EXPECT_FALSE(registry_->remove("acme/unused", false).value()) << "removed";
  EXPECT_EQ(registry_->catalog()->find("acme/unused"), nullptr);
  measure("acme/regnet");
  auto refused = registry_->remove("acme/regnet", false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kConflict);
  EXPECT_TRUE(registry_->remove("acme/regnet", true).value()) << "retired";
  const CatalogModel* retired = registry_->catalog()->find("acme/regnet");
  ASSERT_NE(retired, nullptr) << "kept with its results";
  EXPECT_TRUE(retired->retired);
  MatrixSpec spec = testing::stable_a100_matrix("m", {"acme/regnet"}, {1}, {Mode::kEager});
  auto jobs = expand_matrix(spec, *registry_->catalog(), {});
  ASSERT_FALSE(jobs.ok());
  EXPECT_THAT(jobs.error().message, HasSubstr("retired"));
  EXPECT_EQ(registry_->add(regnet(), false)->outcome, Registered::kUnchanged);
  EXPECT_FALSE(registry_->catalog()->find("acme/regnet")->retired) << "registered again: in service again";
  EXPECT_EQ(registry_->remove("acme/none", false).error().code, ErrorCode::kNotFound);
}

TEST_F(ModelStoreTest, ArtifactsMustExistAndPathsStayUnderTheRoots) {
  const std::string digest = "sha256:" + std::string(64, 'b');
  const json exported = {{"id", "acme/exported"}, {"source", "exported"}, {"artifact", digest}};
  auto missing = registry_->add(exported, false);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().field, "artifact");
  EXPECT_TRUE(store_->models().add_artifact({digest, 10, "file", "m.pt2", 1}).value());
  EXPECT_FALSE(store_->models().add_artifact({digest, 10, "file", "again.pt2", 2}).value()) << "content-addressed";
  EXPECT_EQ(store_->models().find_artifact(digest).value()->name, "m.pt2");
  EXPECT_TRUE(registry_->add(exported, false).ok());
  auto escaping =
      registry_->add({{"id", "acme/x"}, {"source", "exported"}, {"path", "/srv/models/../../etc/x.pt2"}}, false);
  ASSERT_FALSE(escaping.ok());
  EXPECT_EQ(escaping.error().field, "path");
  EXPECT_EQ(store_->models().list_artifacts().value().size(), 1u);
}

}  // namespace
}  // namespace benchfleet::store
