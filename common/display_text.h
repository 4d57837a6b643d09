// Text people read on a screen or in a document: names, hostnames, versions, error messages,
// notes. One rule for all of it, checked where the text enters (an HTTP body, an agent's result)
// and applied again where it leaves (the CLI, CSV, Markdown), so a control sequence an agent or
// an operator typed can neither reach a terminal nor hide or reorder what a reader sees.
//   if (auto why = display_text_problem(note, 4096, TextLines::kMany)) return bad_request("note", *why);
//   out << escape_display_text(server_text);   // "\x1b[2J" arrives as the visible text \x1b[2J
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace benchfleet {

// kMany: a message of several lines, where newline and tab are text; kOne: everything else.
enum class TextLines { kOne, kMany };

// Why `s` cannot be shown as text: longer than `max_bytes`, not UTF-8, or holding a control,
// invisible or bidirectional formatting character (ESC, BEL, NUL, DEL, C1, U+200B, U+202E, the
// default-ignorable code points such as tag characters, U+00AD, U+034F, U+180E, U+3164, U+FE0F,
// the other format characters such as U+FFF9, and the braille blank U+2800; under kMany newline
// and tab are allowed). nullopt when it is fine; empty text is fine.
std::optional<std::string> display_text_problem(std::string_view s, std::size_t max_bytes,
                                                TextLines lines = TextLines::kOne);

// display_text_problem's rule for a name: also neither empty nor blank (only spaces).
std::optional<std::string> display_name_problem(std::string_view s, std::size_t max_bytes = 200);

// Whether `s` is printable ASCII only (with newlines and tabs under kMany): text the rule
// accepts and escaping leaves as it is, found with one pass over the bytes (the fast path of the
// renderers, whose fields nearly always are).
bool is_plain_ascii(std::string_view s, TextLines lines = TextLines::kOne);

// `s` as visible text: each code point the rule refuses is written as an escape a reader can
// see and a terminal does not act on ("\x1b" below U+0100, "\u{202e}" above, "\xff" for a byte
// that is not UTF-8); under kMany newlines and tabs stay. Text the rule accepts comes back as it
// is, and escaping escaped text changes nothing more.
std::string escape_display_text(std::string_view s, TextLines lines = TextLines::kOne);

}  // namespace benchfleet
