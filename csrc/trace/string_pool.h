// StringPool: interned strings stored back to back, addressed by dense int32 ids.
//
// The layout (one data buffer + int64 offsets) is Arrow's large_string layout, so the pool
// becomes the dictionary of every string column without a copy.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hta {

class StringPool {
 public:
  StringPool();
  // A copy is a pool of its own (generation below); a move takes the contents' generation
  // along, and gives the moved-from pool a new one.
  StringPool(const StringPool& other);
  StringPool& operator=(const StringPool& other);
  StringPool(StringPool&& other) noexcept;
  StringPool& operator=(StringPool&& other) noexcept;

  // Returns the id of `s`, adding it if new.
  int32_t intern(std::string_view s);
  std::string_view at(int32_t id) const {
    return {data_.data() + offsets_[id], static_cast<size_t>(offsets_[id + 1] - offsets_[id])};
  }
  // Forgets every string, keeping the memory for reuse; a moved-from pool is usable again.
  void clear();
  int32_t size() const { return static_cast<int32_t>(offsets_.size() - 1); }

  // A number no other pool's contents have had: new for each pool made, copied into or
  // cleared. While it holds, the ids below size() keep their texts (a pool only appends),
  // so a cache of ids by text may outlive one call (parse/recent_strings.h).
  uint64_t generation() const { return generation_; }

  std::vector<char>& data() { return data_; }
  std::vector<int64_t>& offsets() { return offsets_; }

 private:
  void grow();
  static uint64_t hash(std::string_view s);
  static uint64_t next_generation();

  std::vector<char> data_;
  std::vector<int64_t> offsets_;
  // Open addressing; each slot holds id + 1 (0 = empty) so probing never compares strings
  // whose hashes differ.
  std::vector<int32_t> slots_;
  std::vector<uint32_t> slot_hash_;
  uint64_t generation_ = next_generation();
};

}  // namespace hta
