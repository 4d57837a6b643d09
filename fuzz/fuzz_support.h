// What the fuzz targets share: the property every codec must keep, checked with abort() so
// libFuzzer records the input that broke it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "common/codecs.h"

namespace benchfleet::fuzz {

[[noreturn]] inline void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz property broken: %s: %s\n", what, detail.c_str());
  std::abort();
}

// Whatever a decoder accepts, it accepts again after encoding, unchanged: the coordinator
// stores and serves what it decoded, and the agent and CLI decode what it serves.
template <class T>
void check_round_trip(const nlohmann::json& input, const char* type) {
  auto decoded = decode<T>(input);
  if (!decoded.ok()) {
    if (decoded.error().message.empty()) fail(type, "an error without a message for " + input.dump());
    return;
  }
  const nlohmann::json encoded = *decoded;
  auto again = decode<T>(encoded);
  if (!again.ok()) fail(type, "its own encoding is refused: " + again.error().describe() + " in " + encoded.dump());
  if (!(*again == *decoded)) fail(type, "the round trip changed it: " + encoded.dump());
}

}  // namespace benchfleet::fuzz
