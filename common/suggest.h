// The nearest of some known words to a word given by a user: a misspelt key, torch build or GPU
// class is named with what was probably meant ("batch_size" -> "batch_sizes").
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace benchfleet {

// Levenshtein distance (insertions, deletions, substitutions), case-sensitive.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word` when it is near enough to be a likely misspelling: at most
// max(2, |word| / 3) edits away, the first of equally near ones; nullopt when none is, or when
// `word` is itself a candidate.
std::optional<std::string> nearest_word(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean \"x\"?)" for nearest_word's answer, "" without one.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace benchfleet
