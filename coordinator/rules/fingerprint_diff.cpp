#include "coordinator/rules/fingerprint_diff.h"

#include <set>

#include "common/shared_rules.h"

namespace benchfleet::rules {

std::string speed_fingerprint(const nlohmann::json& environment) {
  nlohmann::json out = nlohmann::json::object();
  for (const std::string& k : speed_keys()) {
    const auto it = environment.is_object() ? environment.find(k) : environment.end();
    // high_load is a flag; the others are names and counts.
    const bool usable = environment.is_object() && it != environment.end() &&
                        (k == "high_load" ? it->is_boolean() : (it->is_string() || it->is_number()));
    out[k] = usable ? *it : nlohmann::json(nullptr);
  }
  return out.dump();
}

std::vector<FingerprintDifference> fingerprint_differences(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& sides) {
  // Per side, per key: the distinct values its results recorded (as JSON text).
  std::vector<std::vector<std::set<std::string>>> values(sides.size(),
                                                         std::vector<std::set<std::string>>(speed_keys().size()));
  for (std::size_t s = 0; s < sides.size(); ++s) {
    for (const std::string& text : sides[s].second) {
      const auto fp = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!fp.is_object()) continue;
      for (std::size_t k = 0; k < speed_keys().size(); ++k) {
        const auto it = fp.find(speed_keys()[k]);
        if (it == fp.end() || it->is_null()) continue;
        values[s][k].insert(it->is_string() ? it->get<std::string>() : it->dump());
      }
    }
  }
  std::vector<FingerprintDifference> out;
  for (std::size_t k = 0; k < speed_keys().size(); ++k) {
    const std::set<std::string>* first = nullptr;
    bool differ = false;
    for (std::size_t s = 0; s < sides.size(); ++s) {
      const auto& v = values[s][k];
      if (v.empty()) continue;
      if (v.size() > 1 || (first && *first != v)) differ = true;
      if (!first) first = &v;
    }
    if (!differ) continue;
    FingerprintDifference d{speed_keys()[k], speed_keys()[k] + ":"};
    bool any = false;
    for (std::size_t s = 0; s < sides.size(); ++s) {
      if (values[s][k].empty()) continue;
      d.text += any ? "; " : " ";
      any = true;
      d.text += sides[s].first;
      std::string joined;
      for (const std::string& v : values[s][k]) joined += (joined.empty() ? "" : ", ") + v;
      d.text += " " + joined;
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace benchfleet::rules
