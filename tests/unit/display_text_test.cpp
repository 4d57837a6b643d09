// display_text: one rule for every text people read (names, hostnames, versions, errors,
// notes), checked where it enters and escaped where it leaves.
#include "common/display_text.h"

#include <gtest/gtest.h>

#include <string>

namespace benchfleet {
namespace {

TEST(DisplayText, PlainTextOfEveryScriptPasses) {
  EXPECT_FALSE(display_text_problem("torch 2.6.0+debian", 200));
  EXPECT_FALSE(display_text_problem("Größe · 大きさ · حجم", 200));  // right-to-left script is text, not formatting
  EXPECT_FALSE(display_text_problem("", 200));
}

TEST(DisplayText, ControlInvisibleAndBidiCharactersAreRefusedNamingWhereTheyAre) {
  EXPECT_EQ(display_text_problem("a\x1b[2Jb", 200).value(),
            "must not contain control, invisible or bidirectional characters (U+001B at byte 1)");
  EXPECT_TRUE(display_text_problem("bell\a", 200));
  EXPECT_TRUE(display_text_problem(std::string("nul\0x", 5), 200));
  EXPECT_TRUE(display_text_problem("del\x7f", 200));
  EXPECT_TRUE(
      display_text_problem("c1 \xc2\x9b"
                           "31m",
                           200));  // U+009B, CSI in one code point
  EXPECT_TRUE(
      display_text_problem("exe.\xe2\x80\xae"
                           "txt",
                           200));                                   // U+202E
  EXPECT_TRUE(display_text_problem("zero\xe2\x80\x8bwidth", 200));  // U+200B
  EXPECT_TRUE(display_text_problem("cr\rover", 200, TextLines::kMany));
  EXPECT_FALSE(display_text_problem("csv\r\nline", 200, TextLines::kMany));  // a line ending, not an overwrite
  EXPECT_EQ(escape_display_text("a\r\nb\rc", TextLines::kMany), "a\r\nb\\x0dc");
}

// Code points that draw nothing, each once accepted and printed raw: tag characters, Hangul
// filler, braille blank, soft hyphen, variation selector, Mongolian vowel separator, a deprecated
// format character, an interlinear annotation, the combining grapheme joiner.
TEST(DisplayText, EveryCodePointThatDrawsNothingIsRefused) {
  for (const char* s : {"agent\xf3\xa0\x80\x81", "\xe3\x85\xa4", "\xe2\xa0\x80", "soft\xc2\xad", "v\xef\xb8\x8f",
                        "m\xe1\xa0\x8e", "d\xe2\x81\xaa", "i\xef\xbf\xb9", "c\xcd\x8f"}) {
    EXPECT_TRUE(display_text_problem(s, 200)) << escape_display_text(s);
    EXPECT_TRUE(display_name_problem(s)) << escape_display_text(s);
  }
  // A Hangul filler or a braille blank alone once passed "must not be blank".
  EXPECT_TRUE(display_name_problem("\xe3\x85\xa4"));
  EXPECT_TRUE(display_name_problem("\xe2\xa0\x80"));
  EXPECT_EQ(escape_display_text("agent\xf3\xa0\x80\x81"), "agent\\u{e0001}");
  // Hangul and braille text stays text.
  EXPECT_FALSE(display_text_problem("\xed\x95\x9c\xea\xb8\x80 \xe2\xa0\x81", 200));
}

TEST(DisplayText, NewlinesAndTabsOnlyInTextOfSeveralLines) {
  EXPECT_TRUE(display_text_problem("line\nbreak", 200));
  EXPECT_FALSE(display_text_problem("Traceback:\n\tFile \"x.py\"\n", 200, TextLines::kMany));
}

TEST(DisplayText, LengthAndEncodingAreBounded) {
  EXPECT_EQ(display_text_problem(std::string(201, 'a'), 200).value(), "must be at most 200 bytes long");
  EXPECT_EQ(display_text_problem("ok\xff", 200).value(), "is not valid UTF-8 (byte 2)");
}

TEST(DisplayText, NamesAreAlsoNeitherEmptyNorBlank) {
  EXPECT_EQ(display_name_problem("").value(), "must be 1 to 200 bytes long");
  EXPECT_EQ(display_name_problem(" \xc2\xa0 ").value(), "must not be blank");
  EXPECT_TRUE(display_name_problem("gpu-node\x1b]0;pwned\a"));
  EXPECT_FALSE(display_name_problem("gpu-node-07"));
}

TEST(DisplayText, EscapingShowsWhatTheRuleRefusesAndLeavesTheRest) {
  EXPECT_EQ(escape_display_text("\x1b]0;title\a\x1b[2J"), "\\x1b]0;title\\x07\\x1b[2J");
  EXPECT_EQ(escape_display_text("exe.\xe2\x80\xae"
                                "txt"),
            "exe.\\u{202e}txt");
  EXPECT_EQ(escape_display_text("c1 \xc2\x9b"), "c1 \\x9b");
  EXPECT_EQ(escape_display_text("bad \xff byte"), "bad \\xff byte");
  EXPECT_EQ(escape_display_text("two\nlines"), "two\\x0alines");
  EXPECT_EQ(escape_display_text("two\nlines\tok", TextLines::kMany), "two\nlines\tok");
  const std::string clean = "Größe 大きさ";
  EXPECT_EQ(escape_display_text(clean), clean);
  for (const std::string& hostile :
       {std::string("\x1b[41mX"), std::string("a\xe2\x80\xaeZ"), std::string("n\0l", 3), std::string("\xc0\xaf")}) {
    const std::string once = escape_display_text(hostile);
    EXPECT_FALSE(display_text_problem(once, 1000)) << once;
    EXPECT_EQ(escape_display_text(once), once);
  }
}

}  // namespace
}  // namespace benchfleet
