#include "coordinator/rules/agent_names.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/uspoof.h>

#include <memory>

namespace benchfleet::rules {
namespace {

struct CloseSpoof {
  void operator()(USpoofChecker* s) const { uspoof_close(s); }
};

icu::UnicodeString trimmed(const icu::UnicodeString& s) {
  int32_t begin = 0, end = s.length();
  while (begin < end && u_isUWhiteSpace(s.char32At(begin))) begin = s.moveIndex32(begin, 1);
  while (end > begin && u_isUWhiteSpace(s.char32At(s.moveIndex32(end, -1)))) end = s.moveIndex32(end, -1);
  return icu::UnicodeString(s, begin, end - begin);
}

}  // namespace

std::string agent_name_key(std::string_view name) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* fold = icu::Normalizer2::getNFKCCasefoldInstance(status);
  icu::UnicodeString text =
      trimmed(icu::UnicodeString::fromUTF8(icu::StringPiece(name.data(), static_cast<int32_t>(name.size()))));
  icu::UnicodeString folded = U_SUCCESS(status) ? fold->normalize(text, status) : text;
  if (U_FAILURE(status)) folded = text;
  // A checker per call: uspoof_getSkeleton on a shared one is safe, but its creation is cheap
  // next to an enrolment, and this keeps no global state.
  status = U_ZERO_ERROR;
  std::unique_ptr<USpoofChecker, CloseSpoof> checker(uspoof_open(&status));
  icu::UnicodeString skeleton;
  if (U_SUCCESS(status)) uspoof_getSkeletonUnicodeString(checker.get(), 0, folded, skeleton, &status);
  if (U_FAILURE(status) || !checker) skeleton = folded;
  // The skeleton of folded text may hold upper-case prototypes again: fold once more.
  status = U_ZERO_ERROR;
  icu::UnicodeString key = fold ? fold->normalize(skeleton, status) : skeleton;
  if (U_FAILURE(status)) key = skeleton;
  std::string out;
  key.toUTF8String(out);
  return out;
}

}  // namespace benchfleet::rules
