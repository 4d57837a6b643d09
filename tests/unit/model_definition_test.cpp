// The rule of a model definition (docs/models.md), which the catalog's entries and every model an
// operator registers keep: what each source needs, what it refuses, and the field each error names.
#include "common/model_definition.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace benchfleet {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

const std::string kDigest = "sha256:" + std::string(64, 'a');

Error error_of(const json& definition, const std::optional<std::vector<std::string>>& roots = std::nullopt) {
  auto m = check_model_definition(definition, "model", roots);
  EXPECT_FALSE(m.ok()) << definition.dump();
  return m.ok() ? Error{} : m.error();
}

TEST(ModelDefinition, EachSourceInItsSmallestForm) {
  for (const json& d : {
           json{{"id", "acme/vit"}, {"source", "huggingface"}, {"artifact", kDigest}},
           json{{"id", "acme/vit"}, {"source", "huggingface"}, {"hub_id", "google/vit-base-patch16-224"}},
           json{{"id", "acme/vit"}, {"source", "huggingface"}, {"path", "/srv/models/vit"}},
           json{
               {"id", "acme/vit"}, {"source", "huggingface"}, {"architecture", "ViTModel"}, {"config", json::object()}},
           json{{"id", "regnet_y_400mf"}, {"source", "torchvision"}, {"architecture", "regnet_y_400mf"}},
           json{{"id", "timm/resnet50"}, {"source", "timm"}, {"architecture", "resnet50"}},
           json{{"id", "acme/factory"}, {"source", "python"}, {"factory", "acme_models.vision:make"}},
           json{{"id", "acme/exported"}, {"source", "exported"}, {"artifact", kDigest}},
       }) {
    auto m = check_model_definition(d, "model");
    EXPECT_TRUE(m.ok()) << d.dump() << ": " << m.error().message;
  }
}

TEST(ModelDefinition, DefaultsAreFilledInForTheJob) {
  auto m = check_model_definition({{"id", "acme/detection/yolo-x"}, {"source", "python"}, {"factory", "a:b"}}, "m");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->name, "yolo-x") << "the id's last segment";
  EXPECT_EQ(m->task, "Model");
  EXPECT_EQ(m->definition["formats"], json::array()) << "a python model has no libtorch artifact";
  auto tv =
      check_model_definition({{"id", "tv/regnet"}, {"source", "torchvision"}, {"architecture", "regnet_y_400mf"}}, "m");
  ASSERT_TRUE(tv.ok());
  EXPECT_EQ(tv->task, "Image Classification");
  auto ex = check_model_definition({{"id", "x"}, {"source", "exported"}, {"artifact", kDigest}}, "m");
  ASSERT_TRUE(ex.ok());
  EXPECT_EQ(ex->definition["formats"], json({"aotinductor"}));
}

TEST(ModelDefinition, ErrorsNameTheField) {
  EXPECT_EQ(error_of(json::array()).field, "model");
  EXPECT_EQ(error_of({{"source", "timm"}, {"architecture", "x"}}).field, "model.id");
  EXPECT_EQ(error_of({{"id", "x"}, {"source", "onnx"}}).field, "model.source");
  EXPECT_THAT(error_of({{"id", "x"}, {"source", "onnx"}}).message, HasSubstr("unknown source 'onnx'"));
  EXPECT_EQ(error_of({{"id", "x"}, {"source", "timm"}, {"architecture", "r"}, {"weights", "w"}}).field,
            "model.weights");
  EXPECT_EQ(error_of({{"id", "x"}, {"source", "timm"}}).field, "model.architecture");
  EXPECT_EQ(error_of({{"id", "x"}, {"source", "python"}, {"factory", "no_colon"}}).field, "model.factory");
  EXPECT_EQ(error_of({{"id", "x"}, {"source", "python"}, {"factory", "a.1b:f"}}).field, "model.factory");
  EXPECT_EQ(error_of({{"id", "x"}, {"source", "python"}, {"factory", "a:b"}, {"hub_id", "h"}}).field, "model.hub_id")
      << "a key its source does not take";
  EXPECT_EQ(error_of({{"id", "x"}, {"source", "exported"}}).field, "model.source");
  EXPECT_EQ(error_of({{"id", "x"}, {"source", "exported"}, {"artifact", "sha256:abc"}}).field, "model.artifact");
  EXPECT_EQ(error_of({{"id", "x"}, {"source", "huggingface"}, {"hub_id", "a"}, {"artifact", kDigest}}).field,
            "model.source")
      << "exactly one of hub_id, path, artifact, config";
  EXPECT_EQ(error_of({{"id", "x"}, {"source", "huggingface"}, {"config", json::object()}}).field, "model.architecture");
  EXPECT_EQ(error_of({{"id", "x"}, {"source", "timm"}, {"architecture", "r"}, {"inputs", {{{"name", "p"}}}}}).field,
            "model.inputs[0].shape");
  EXPECT_EQ(
      error_of(
          {{"id", "x"}, {"source", "timm"}, {"architecture", "r"}, {"inputs", {{{"name", "p"}, {"shape", {3, 0}}}}}})
          .field,
      "model.inputs[0].shape");
  EXPECT_EQ(error_of({{"id", "x"}, {"source", "timm"}, {"architecture", "r"}, {"formats", {"onnx"}}}).field,
            "model.formats");
  EXPECT_EQ(error_of({{"id", "x"}, {"source", "timm"}, {"architecture", "r"}, {"allow_pickle", "yes"}}).field,
            "model.allow_pickle");
}

TEST(ModelDefinition, IdsAreSafeInUrlsFilesAndSeries) {
  for (const std::string& bad :
       std::vector<std::string>{"", "../x", "a/../b", "a//b", "a/", "-x", "a b", "a@2", "a:b", std::string(129, 'a')}) {
    EXPECT_EQ(error_of({{"id", bad}, {"source", "timm"}, {"architecture", "r"}}).field, "model.id") << bad;
  }
}

TEST(ModelDefinition, TextFollowsTheDisplayRule) {
  EXPECT_EQ(error_of({{"id", "x"}, {"source", "timm"}, {"architecture", "r"}, {"name", "evil\u202Ename"}}).field,
            "model.name");
  EXPECT_EQ(error_of({{"id", "x"}, {"source", "timm"}, {"architecture", "r"}, {"task", "\x1b[2J"}}).field,
            "model.task");
}

TEST(ModelDefinition, PathsStayUnderTheRoots) {
  const std::vector<std::string> roots = {"/srv/models", "/data/ckpt/"};
  const auto hf = [](const std::string& path) { return json{{"id", "x"}, {"source", "huggingface"}, {"path", path}}; };
  EXPECT_TRUE(check_model_definition(hf("/srv/models/vit"), "m", roots).ok());
  EXPECT_TRUE(check_model_definition(hf("/data/ckpt/a/b"), "m", roots).ok()) << "a root given with a trailing /";
  EXPECT_THAT(error_of(hf("/srv/models/../../etc"), roots).message, HasSubstr(".."));
  EXPECT_THAT(error_of(hf("relative/dir"), roots).message, HasSubstr("absolute"));
  EXPECT_THAT(error_of(hf("/srv/models-evil/x"), roots).message, HasSubstr("under none of"));
  EXPECT_THAT(error_of(hf("/etc/passwd"), roots).message, HasSubstr("/srv/models"));
  EXPECT_THAT(error_of(hf("/srv/models/x"), std::vector<std::string>{}).message, HasSubstr("none configured"));
  EXPECT_TRUE(check_model_definition(hf("/anything"), "m").ok()) << "no roots given: not checked here";
}

TEST(ModelDefinition, DigestsAreSha256) {
  EXPECT_TRUE(is_digest(kDigest));
  EXPECT_FALSE(is_digest("sha256:" + std::string(64, 'A')));
  EXPECT_FALSE(is_digest("sha256:" + std::string(63, 'a')));
  EXPECT_FALSE(is_digest("md5:" + std::string(64, 'a')));
  EXPECT_EQ(artifacts_of({{"artifact", kDigest}}), std::vector<std::string>{kDigest});
  EXPECT_TRUE(artifacts_of({{"path", "/x"}}).empty());
}

}  // namespace
}  // namespace benchfleet
