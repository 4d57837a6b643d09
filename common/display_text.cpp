#include "common/display_text.h"

#include <cstdio>

namespace benchfleet {
namespace {

// Decodes one UTF-8 code point at s[i], advancing i; nullopt for malformed or overlong input.
std::optional<char32_t> next_code_point(std::string_view s, std::size_t& i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  int extra = 0;
  char32_t cp = 0;
  if (b0 < 0x80) {
    ++i;
    return b0;
  } else if ((b0 & 0xE0) == 0xC0) {
    extra = 1, cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    extra = 2, cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    extra = 3, cp = b0 & 0x07;
  } else {
    return std::nullopt;
  }
  if (i + static_cast<std::size_t>(extra) >= s.size()) return std::nullopt;
  for (int k = 1; k <= extra; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr char32_t kMinForLength[] = {0, 0x80, 0x800, 0x10000};
  if (cp < kMinForLength[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
  i += static_cast<std::size_t>(extra) + 1;
  return cp;
}

// Controls (C0, DEL, C1), line/paragraph separators, zero-width and bidirectional formatting
// characters: they hide or reorder what a reader sees (U+202E shows "exe.txt" as "txt.exe").
// And every other code point that draws nothing: Unicode's default-ignorable ones (soft hyphen,
// combining grapheme joiner, Hangul fillers, Mongolian vowel separator and variation selectors,
// deprecated format characters, variation selectors, tag characters, ...), the other format
// characters (interlinear annotations, Arabic and Syriac marks, shorthand and musical format
// controls), and the braille blank, which passes for a space.
bool is_invisible_or_control(char32_t c) {
  struct Range {
    char32_t first, last;
  };
  static constexpr Range kInvisible[] = {
      {0x0000, 0x001F},   {0x007F, 0x009F},   {0x00AD, 0x00AD},   {0x034F, 0x034F},   {0x0600, 0x0605},
      {0x061C, 0x061C},   {0x06DD, 0x06DD},   {0x070F, 0x070F},   {0x0890, 0x0891},   {0x08E2, 0x08E2},
      {0x115F, 0x1160},   {0x17B4, 0x17B5},   {0x180B, 0x180F},   {0x200B, 0x200F},   {0x2028, 0x202E},
      {0x2060, 0x206F},   {0x2800, 0x2800},   {0x3164, 0x3164},   {0xFE00, 0xFE0F},   {0xFEFF, 0xFEFF},
      {0xFFA0, 0xFFA0},   {0xFFF0, 0xFFFB},   {0x110BD, 0x110BD}, {0x110CD, 0x110CD}, {0x13430, 0x1343F},
      {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF},
  };
  for (const Range& r : kInvisible) {
    if (c < r.first) return false;  // sorted
    if (c <= r.last) return true;
  }
  return false;
}

bool is_blank(char32_t c) {
  return c == ' ' || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// Whether the code point just read, ending at `next`, is text: under kMany newlines, tabs and a
// carriage return that ends a line ("\r\n", as CSV writes) are.
bool allowed(char32_t c, TextLines lines, std::string_view s, std::size_t next) {
  if (lines == TextLines::kMany) {
    if (c == '\n' || c == '\t') return true;
    if (c == '\r' && next < s.size() && s[next] == '\n') return true;
  }
  return !is_invisible_or_control(c);
}

std::string hex_escape(const char* format, unsigned value) {
  char buf[16];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

}  // namespace

std::optional<std::string> display_text_problem(std::string_view s, std::size_t max_bytes, TextLines lines) {
  if (s.size() > max_bytes) return "must be at most " + std::to_string(max_bytes) + " bytes long";
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t at = i;
    const auto cp = next_code_point(s, i);
    if (!cp) return "is not valid UTF-8 (byte " + std::to_string(at) + ")";
    if (!allowed(*cp, lines, s, i)) {
      return "must not contain control, invisible or bidirectional characters (" +
             hex_escape("U+%04X", static_cast<unsigned>(*cp)) + " at byte " + std::to_string(at) + ")";
    }
  }
  return std::nullopt;
}

std::optional<std::string> display_name_problem(std::string_view s, std::size_t max_bytes) {
  if (s.empty() || s.size() > max_bytes) return "must be 1 to " + std::to_string(max_bytes) + " bytes long";
  if (auto why = display_text_problem(s, max_bytes)) return why;
  bool blank = true;
  for (std::size_t i = 0; i < s.size() && blank;) blank = is_blank(*next_code_point(s, i));
  if (blank) return "must not be blank";
  return std::nullopt;
}

bool is_plain_ascii(std::string_view s, TextLines lines) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7F) continue;
    if (lines == TextLines::kMany && (c == '\n' || c == '\t')) continue;
    return false;
  }
  return true;
}

std::string escape_display_text(std::string_view s, TextLines lines) {
  if (is_plain_ascii(s, lines)) return std::string(s);
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t at = i;
    const auto cp = next_code_point(s, i);
    if (!cp) {
      out += hex_escape("\\x%02x", static_cast<unsigned char>(s[at]));
      i = at + 1;
    } else if (!allowed(*cp, lines, s, i)) {
      out += *cp < 0x100 ? hex_escape("\\x%02x", static_cast<unsigned>(*cp))
                         : hex_escape("\\u{%04x}", static_cast<unsigned>(*cp));
    } else {
      out.append(s.substr(at, i - at));
    }
  }
  return out;
}

}  // namespace benchfleet
