// A model definition (docs/models.md): the small JSON document that says how to build a model
// and its inputs, from one of five sources. The shipped catalog's entries are definitions, and
// so is every model an operator registers; the coordinator puts the definition into each job, and
// the agent's python builds the model from it.
//   Result<CatalogModel> m = check_model_definition(body, "model");
//   if (!m) return m.error();   // kInvalidArgument naming the field, e.g. "model.inputs[0].shape"
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/catalog.h"
#include "common/result.h"

namespace benchfleet {

inline constexpr std::array<std::string_view, 5> kModelSources = {"huggingface", "torchvision", "timm", "python",
                                                                  "exported"};
inline constexpr std::size_t kMaxModelIdBytes = 128;
// An artifact's name in a definition: "sha256:" and 64 lower-case hex digits.
inline constexpr std::string_view kDigestPrefix = "sha256:";

// Checks `definition` and returns the model it defines, with `definition` as given plus the
// defaults it leaves out (task, name, formats) filled in, so a job carries the whole of it.
// `field` prefixes every error's field ("models[3]" -> "models[3].source"). Refused: not an
// object; an unknown key; a missing id or source; an id outside [A-Za-z0-9._/-] (starting with
// a letter or digit; no "..", "//" or trailing '/'; at most kMaxModelIdBytes); an unknown source;
// text breaking the display-text rule; a path that is not absolute or holds ".." or is under
// none of `path_roots` (when given: the coordinator's model_roots; nullopt skips that check, as
// agents and tools reading the catalog do); an artifact that is not a digest; a factory that is
// not "package.module:function"; inputs that are not [{name, shape, dtype}] with positive shapes;
// a source's required keys missing or keys that source does not take.
Result<CatalogModel> check_model_definition(const nlohmann::json& definition, const std::string& field,
                                            const std::optional<std::vector<std::string>>& path_roots = std::nullopt);

// Whether `text` is "sha256:" and 64 lower-case hex digits.
bool is_digest(std::string_view text);

// The artifact digests a definition names ("artifact"), for the checks that they exist.
std::vector<std::string> artifacts_of(const nlohmann::json& definition);

}  // namespace benchfleet
