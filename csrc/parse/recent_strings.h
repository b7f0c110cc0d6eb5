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
  // whatever its length. `check()` (the walker's test for escapes, which throws) runs
  // before a text is taken that did not pass it here before: a string read again skips
  // reading its text a second time. intern() takes raw JSON, which is not checked.
  template <class Check>
  int32_t intern_checked(std::string_view s, Check&& check) {
    Entry& e = entry(s);
    if (e.text.data() != nullptr && same_text(e.text, s)) {
      if (!e.checked) {
        check();
        e.checked = true;
      }
      return e.id;
    }
    check();
    e = {s, pool_.intern(s), true};
    return e.id;
  }
  int32_t intern(std::string_view s) {
    Entry& e = entry(s);
    if (e.text.data() == nullptr || !same_text(e.text, s)) e = {s, pool_.intern(s), false};
    return e.id;
  }

 private:
  struct Entry {
    std::string_view text;
    int32_t id = -1;
    bool checked = false;
  };

  Entry& entry(std::string_view s) {
    uint64_t head, tail = 0;
    std::memcpy(&head, s.data(), 8);
    if (s.size() < 8) {
      head &= (uint64_t{1} << (8 * s.size())) - 1;  // bytes past a short text are not its own
    } else {
      // Names share their starts ("aten::", "void at::native::"): the end tells them apart.
      std::memcpy(&tail, s.data() + s.size() - 8, 8);
    }
    const uint64_t key =
        (head ^ (tail >> 7) ^ (s.size() * 0x9E3779B97F4A7C15ULL)) * 0xff51afd7ed558ccdULL;
    return entries_[key >> (64 - kBits)];
  }

  static constexpr int kBits = 8;
  StringPool& pool_;
  Entry entries_[1 << kBits];
};

}  // namespace hta
