// RecentStrings: the ids of the strings a walk interned lately, looked up by their text
// before the pool is. Kineto writes the same names and argument texts over and over (an
// operator's "Input type", a copy's name); the pool's lookup hashes the whole text and
// probes a table that the walk's stream of input keeps evicting from cache, while this
// cache is a few kilobytes that stay in L1 and compares the text directly.
#pragma once
#include <cstdint>
#include <cstring>
#include <string_view>

#include "trace/same_text.h"
#include "trace/string_pool.h"

namespace hta {

class RecentStrings {
 public:
  explicit RecentStrings(StringPool& pool) : pool_(pool) {}

  // The pool's id of `s`, which lies in a padded chunk: its first 8 bytes can be read
  // whatever its length. `on_miss()` runs before a text that is not among the recent ones
  // goes to the pool: the walker's check for escapes, which a recent text passed when it
  // came in (a hit skips reading the text a second time).
  template <class OnMiss>
  int32_t intern(std::string_view s, OnMiss&& on_miss) {
    uint64_t head;
    std::memcpy(&head, s.data(), 8);
    // Bytes past a short text are not part of it: keep only its own.
    if (s.size() < 8) head &= (uint64_t{1} << (8 * s.size())) - 1;
    const uint64_t key = (head ^ (s.size() * 0x9E3779B97F4A7C15ULL)) * 0xff51afd7ed558ccdULL;
    Entry& e = entries_[key >> (64 - kBits)];
    if (e.text.data() != nullptr && same_text(e.text, s)) return e.id;
    on_miss();
    e = {s, pool_.intern(s)};
    return e.id;
  }
  int32_t intern(std::string_view s) {
    return intern(s, [] {});
  }

 private:
  static constexpr int kBits = 8;
  struct Entry {
    std::string_view text;
    int32_t id = -1;
  };
  StringPool& pool_;
  Entry entries_[1 << kBits];
};

}  // namespace hta
