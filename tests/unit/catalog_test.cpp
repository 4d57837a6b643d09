#include "common/catalog.h"

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace benchfleet {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kOrigin = "test.yaml";

// The seeds' tables, in their row order.
const std::vector<std::pair<std::string, std::string>> kSeedModels = {
    {"google/vit-base-patch16-224", "Image Classification/ViT"},
    {"nvidia/segformer-b0-finetuned-ade-512-512", "Image Segmentation/Segformer"},
    {"google/owlvit-base-patch32", "Object Detection/OwlViT"},
    {"microsoft/beit-base-patch16-224-pt22k-ft22k", "Image Classification/BeiT"},
    {"facebook/detr-resnet-50", "Object Detection/DETR"},
    {"facebook/convnext-large-224", "Image Classification/ConvNeXT"},
    {"microsoft/resnet-50", "Image Classification/ResNet"},
    {"facebook/mask2former-swin-tiny-coco-panoptic", "Image Segmentation/Mask2former"},
    {"facebook/maskformer-swin-base-ade", "Image Segmentation/Maskformer"},
    {"google/deeplabv3_mobilenet_v2_1.0_513", "Image Segmentation/MobileNet"},
    {"facebook/detr-resnet-101", "Object Detection/Resnet-101"},
    {"microsoft/conditional-detr-resnet-50", "Object Detection/Conditional-DETR"},
};

const char* kTwoModels = R"(models:
  - id: a/one
    source: huggingface
    task: Image Classification
    name: One
    hub_id: a/one
  - id: torchvision/two
    source: torchvision
    task: Object Detection
    name: Two
    architecture: two
)";

Error parse_error(const std::string& yaml) {
  Result<Catalog> c = Catalog::parse(yaml, kOrigin);
  EXPECT_FALSE(c.ok()) << "expected an error for:\n" << yaml;
  return c.ok() ? Error{} : c.error();
}

TEST(Catalog, ShippedFileHasSeedModelsInOrderThenTorchvision) {
  Result<Catalog> c = Catalog::load_file(std::string(BENCHFLEET_SOURCE_DIR) + "/common/catalog/models.yaml");
  ASSERT_TRUE(c.ok()) << c.error().describe();
  const auto& models = c->models();
  ASSERT_EQ(models.size(), 15u);
  for (std::size_t i = 0; i < kSeedModels.size(); ++i) {
    SCOPED_TRACE(kSeedModels[i].first);
    EXPECT_EQ(models[i].id, kSeedModels[i].first);
    EXPECT_EQ(models[i].display_name(), kSeedModels[i].second);
    EXPECT_EQ(models[i].source, "huggingface");
    EXPECT_FALSE(models[i].architecture.empty());
    EXPECT_TRUE(models[i].definition.contains("config")) << "the seeds' models are built from their config";
    EXPECT_TRUE(models[i].definition.contains("inputs"));
  }
  const CatalogModel* resnet18 = c->find("torchvision/resnet18");
  ASSERT_NE(resnet18, nullptr);
  EXPECT_EQ(resnet18->source, "torchvision");
  EXPECT_EQ(resnet18->architecture, "resnet18");
  EXPECT_EQ(resnet18->display_name(), "Image Classification/ResNet-18");
  ASSERT_NE(c->find("torchvision/mobilenet_v3_small"), nullptr);
  EXPECT_EQ(c->find("torchvision/mobilenet_v3_small")->display_name(), "Image Classification/MobileNetV3-Small");
  ASSERT_NE(c->find("torchvision/squeezenet1_1"), nullptr);
  EXPECT_EQ(c->find("torchvision/squeezenet1_1")->display_name(), "Image Classification/SqueezeNet 1.1");
}

TEST(Catalog, DefaultPathHonoursEnvironment) {
  const char* saved = std::getenv("BENCHFLEET_CATALOG");
  const std::string restore = saved ? saved : "";
  ::unsetenv("BENCHFLEET_CATALOG");
  EXPECT_EQ(default_catalog_path(), std::string(BENCHFLEET_SOURCE_DIR) + "/common/catalog/models.yaml");
  ::setenv("BENCHFLEET_CATALOG", "/tmp/other.yaml", 1);
  EXPECT_EQ(default_catalog_path(), "/tmp/other.yaml");
  if (saved) {
    ::setenv("BENCHFLEET_CATALOG", restore.c_str(), 1);
  } else {
    ::unsetenv("BENCHFLEET_CATALOG");
  }
}

TEST(Catalog, FindAndIndexOf) {
  Result<Catalog> c = Catalog::parse(kTwoModels, kOrigin);
  ASSERT_TRUE(c.ok()) << c.error().describe();
  EXPECT_EQ(c->index_of("a/one"), 0u);
  EXPECT_EQ(c->index_of("torchvision/two"), 1u);
  EXPECT_EQ(c->index_of("nope"), Catalog::npos);
  ASSERT_NE(c->find("torchvision/two"), nullptr);
  EXPECT_EQ(c->find("torchvision/two")->task, "Object Detection");
  EXPECT_EQ(c->find("nope"), nullptr);
  EXPECT_EQ(Catalog().find("a/one"), nullptr);
}

TEST(Catalog, ShortNamesResolveToTheOneIdTheyEnd) {
  Result<Catalog> c = Catalog::load_file(std::string(BENCHFLEET_SOURCE_DIR) + "/common/catalog/models.yaml");
  ASSERT_TRUE(c.ok()) << c.error().describe();
  const auto id = [&](std::string_view given) {
    auto r = c->resolve_id(given, "models[0]");
    return r.ok() ? *r : "error: " + r.error().message;
  };
  EXPECT_EQ(id("torchvision/resnet18"), "torchvision/resnet18") << "an id is itself";
  EXPECT_EQ(id("resnet18"), "torchvision/resnet18");
  EXPECT_EQ(id("ViT-Base-Patch16-224"), "google/vit-base-patch16-224") << "without case";
  EXPECT_EQ(id("resnet-50"), "microsoft/resnet-50") << "a whole name after the '/' wins over a trailing part";
  EXPECT_EQ(id("resnet-101"), "facebook/detr-resnet-101") << "a trailing part, unique";
  EXPECT_EQ(id("GOOGLE/VIT-BASE-PATCH16-224"), "google/vit-base-patch16-224");

  EXPECT_EQ(id("patch16-224"), "google/vit-base-patch16-224") << "BEiT's id goes on after it";
  const auto ambiguous = c->resolve_id("50", "models[2]");
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_EQ(ambiguous.error().field, "models[2]");
  EXPECT_NE(ambiguous.error().message.find("ambiguous model \"50\""), std::string::npos) << ambiguous.error().message;
  EXPECT_NE(
      ambiguous.error().message.find(
          "it ends 3 catalog ids (facebook/detr-resnet-50, microsoft/resnet-50, microsoft/conditional-detr-resnet-50)"),
      std::string::npos)
      << ambiguous.error().message;

  const auto typo = c->resolve_id("resnet81", "models[0]");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("unknown model \"resnet81\""), std::string::npos) << typo.error().message;
  EXPECT_NE(typo.error().message.find("did you mean \"torchvision/resnet18\"?"), std::string::npos)
      << typo.error().message;
  EXPECT_TRUE(c->ids_matching("nothing-like-it").empty());
  EXPECT_TRUE(c->ids_matching("net18").empty()) << "a part starts at a boundary, not mid-word";
}

TEST(Catalog, EntriesAreDefinitionsAsJson) {
  Result<Catalog> c = Catalog::parse(R"(models:
  - id: a/one
    source: huggingface
    architecture: OneForImageClassification
    config: {hidden: 768, scale: 0.5, qkv_bias: true, act: "42", note: ~}
)",
                                     kOrigin);
  ASSERT_TRUE(c.ok()) << c.error().describe();
  const CatalogModel& m = c->models()[0];
  const nlohmann::json expected = {
      {"hidden", 768}, {"scale", 0.5}, {"qkv_bias", true}, {"act", "42"}, {"note", nullptr}};
  EXPECT_EQ(m.definition["config"], expected);
  EXPECT_TRUE(m.definition["config"]["hidden"].is_number_integer());
  // The defaults a job needs are filled in.
  EXPECT_EQ(m.task, "Model");
  EXPECT_EQ(m.name, "one");
  EXPECT_EQ(m.definition["task"], "Model");
  EXPECT_EQ(m.definition["formats"], nlohmann::json({"torchscript", "torchscript-frozen", "aotinductor"}));
  EXPECT_EQ(m.key(), "a/one");
  CatalogModel v2 = m;
  v2.version = 2;
  EXPECT_EQ(v2.key(), "a/one@2");
  EXPECT_EQ(v2.display_name(), "Model/one (v2)");
}

TEST(Catalog, VersionedKeysAndCurrentVersions) {
  Result<Catalog> base = Catalog::parse(kTwoModels, kOrigin);
  ASSERT_TRUE(base.ok()) << base.error().describe();
  std::vector<CatalogModel> models = base->models();
  CatalogModel v2 = models[0];
  v2.version = 2;
  models[0].current = false;
  models.push_back(v2);
  const Catalog c = Catalog::of(models);
  EXPECT_EQ(c.resolve_id("a/one", "m").value(), "a/one@2") << "an id means its current version";
  EXPECT_EQ(c.resolve_id("one", "m").value(), "a/one@2");
  EXPECT_EQ(c.resolve_id("a/one@2", "m").value(), "a/one@2");
  EXPECT_EQ(c.find("a/one")->version, 1) << "an old version is found by its key";
  EXPECT_EQ(c.find("a/one@2")->version, 2);
  EXPECT_EQ(c.find("a/one@3"), nullptr);
  EXPECT_EQ(c.index_of("a/one@2"), 2u);
}

TEST(Catalog, DuplicateIdNamesTheSecondEntry) {
  std::string yaml = kTwoModels;
  yaml.replace(yaml.find("torchvision/two"), 15, "a/one");
  const Error e = parse_error(yaml);
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(e.field, "models[1].id");
  EXPECT_THAT(e.message, HasSubstr("duplicate id 'a/one'"));
  EXPECT_THAT(e.message, HasSubstr("test.yaml:7:"));
}

TEST(Catalog, UnknownKeyIsNamed) {
  std::string yaml = kTwoModels;
  yaml += "    weights: /tmp/x.pt\n";
  const Error e = parse_error(yaml);
  EXPECT_EQ(e.field, "models[1].weights");
  EXPECT_THAT(e.message, HasSubstr("unknown key"));
  EXPECT_THAT(e.message, HasSubstr("test.yaml:12:5"));
}

TEST(Catalog, MissingOrEmptyRequiredKeyIsNamed) {
  std::string yaml = kTwoModels;
  yaml.erase(yaml.find("    source: torchvision\n"), 24);
  Error e = parse_error(yaml);
  EXPECT_EQ(e.field, "models[1].source");
  EXPECT_THAT(e.message, HasSubstr("required"));
  EXPECT_THAT(e.message, HasSubstr("test.yaml"));

  yaml = kTwoModels;
  yaml.replace(yaml.find("name: One"), 9, "name: \"\"");
  e = parse_error(yaml);
  EXPECT_EQ(e.field, "models[0].name");

  yaml = kTwoModels;
  yaml.replace(yaml.find("name: One"), 9, "name: [x]");
  e = parse_error(yaml);
  EXPECT_EQ(e.field, "models[0].name");
}

TEST(Catalog, UnknownSourceIsNamed) {
  std::string yaml = kTwoModels;
  yaml.replace(yaml.find("source: torchvision"), 19, "source: onnx");
  const Error e = parse_error(yaml);
  EXPECT_EQ(e.field, "models[1].source");
  EXPECT_THAT(e.message, HasSubstr("'onnx'"));
}

TEST(Catalog, MalformedYamlReportsLineAndColumn) {
  const Error e = parse_error("models:\n  - id: [unclosed\n    source: x\n");
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(e.field, "");
  EXPECT_THAT(e.message, HasSubstr("malformed YAML"));
  EXPECT_THAT(e.message, ::testing::MatchesRegex("test\\.yaml:[0-9]+:[0-9]+: .*"));
}

TEST(Catalog, WrongShapesAreRejected) {
  EXPECT_EQ(parse_error("").field, "");
  EXPECT_EQ(parse_error("- a\n- b\n").field, "");
  EXPECT_EQ(parse_error("models: []\n").field, "models");
  EXPECT_EQ(parse_error("models: {}\n").field, "models");
  EXPECT_EQ(parse_error("other: 1\n").field, "other");
  EXPECT_EQ(parse_error("models:\n  - just-a-string\n").field, "models[0]");
  EXPECT_EQ(parse_error(std::string(kTwoModels) + "    worker: [1]\n").field, "models[1].worker");
  EXPECT_EQ(parse_error(std::string(kTwoModels) + "    name: Again\n").field, "models[1].name");
}

TEST(Catalog, MissingFileIsNotFound) {
  Result<Catalog> c = Catalog::load_file("/nonexistent/benchfleet/models.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(c.error().message, HasSubstr("/nonexistent/benchfleet/models.yaml"));
}

}  // namespace
}  // namespace benchfleet
