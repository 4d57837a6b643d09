// libFuzzer target: the CLI's matrix files (YAML, converted to JSON with line numbers, then the
// coordinator's matrix codec). Property: no crash, no exception escaping parse_matrix, no
// sanitizer report; an error names a line; an accepted matrix survives encode + decode.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cli/matrix_file.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace benchfleet;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto file = cli::parse_matrix(text, "fuzz.yaml");
  if (!file.ok()) {
    if (file.error().message.rfind("fuzz.yaml: ", 0) != 0) {
      fuzz::fail("parse_matrix", "an error that does not name the file: " + file.error().message);
    }
    return 0;
  }
  fuzz::check_round_trip<MatrixSpec>(nlohmann::json(file->spec), "MatrixSpec from YAML");
  return 0;
}
