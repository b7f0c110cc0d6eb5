// RecentStrings: the ids of the strings a walker interned lately, looked up by their text
// before the pool is. Kineto writes the same names and argument texts over and over (an
// operator's "Input type", a copy's name); the pool's lookup hashes the whole text and
// probes a table that the walk's stream of input keeps evicting from cache, while this
// cache is a few kilobytes that stay in L1. It keeps ids, not texts, and compares with the
// pool's text of the id, so it holds from chunk to chunk while the walker's pool is the same
// (StringPool::generation): a chunk does not start with every name unknown.
#pragma once
#include <cstdint>
#include <cstring>
#include <string_view>

#include "trace/same_text.h"
#include "trace/string_pool.h"

namespace hta {

class RecentStrings {
 public:
  // The pool the next walk interns into: what was learned of another, or of this one
  // before it was cleared, is forgotten.
  void bind(StringPool& pool) {
    if (&pool != pool_ || pool.generation() != generation_) {
      for (Entry& e : entries_) e = Entry{};
      pool_ = &pool;
      generation_ = pool.generation();
    }
  }

  // The pool's id of `s`, which lies in a padded chunk: its first 8 bytes can be read
  // whatever its length. `check()` (the walker's test for escapes, which throws) runs
  // before a text is taken that did not pass it here before: a string read again skips
  // reading its text a second time. intern() takes raw JSON, which is not checked.
  template <class Check>
  int32_t intern_checked(std::string_view s, Check&& check) {
    Entry& e = entry(s);
    if (holds(e, s)) {
      if (!e.checked) {
        check();
        e.checked = true;
      }
      return e.id;
    }
    check();
    e = {pool_->intern(s), true};
    return e.id;
  }
  int32_t intern(std::string_view s) {
    Entry& e = entry(s);
    if (!holds(e, s)) e = {pool_->intern(s), false};
    return e.id;
  }

 private:
  struct Entry {
    int32_t id = -1;
    bool checked = false;
  };

  // Whether `e` is the entry of `s` (its id is in the pool: bind() keeps only those).
  bool holds(const Entry& e, std::string_view s) const {
    return e.id >= 0 && same_text(pool_->at(e.id), s);
  }

  Entry& entry(std::string_view s) {
    const char* p = s.data();
    const size_t n = s.size();
    auto word = [](const char* at) {
      uint64_t w;
      std::memcpy(&w, at, 8);
      return w;
    };
    uint64_t key = word(p);
    if (n < 8) {
      key &= (uint64_t{1} << (8 * n)) - 1;  // bytes past a short text are not its own
    } else {
      // Names share their starts, ends and more ("torch/nn/modules/module.py(2823):
      // named_modules" and its neighbours, a few calls apart in every step): words from
      // across the whole text tell them apart.
      key ^=
          (word(p + (n - 8) / 3) >> 3) ^ (word(p + 2 * (n - 8) / 3) >> 5) ^ (word(p + n - 8) >> 7);
    }
    key = (key ^ (n * 0x9E3779B97F4A7C15ULL)) * 0xff51afd7ed558ccdULL;
    return entries_[key >> (64 - kBits)];
  }

  static constexpr int kBits = 10;
  StringPool* pool_ = nullptr;
  uint64_t generation_ = 0;
  Entry entries_[1 << kBits];
};

}  // namespace hta
