#include "trace/string_pool.h"

#include <algorithm>
#include <cstring>

namespace hta {

StringPool::StringPool() : offsets_{0}, slots_(1024, 0), slot_hash_(1024, 0) {}

void StringPool::clear() {
  data_.clear();
  offsets_.assign(1, 0);
  std::fill(slots_.begin(), slots_.end(), 0);
}

uint64_t StringPool::hash(std::string_view s) {
  // FNV-1a over 8-byte words: strings here are names (often 100s of bytes), so per-byte
  // hashing would dominate interning.
  uint64_t h = 0xcbf29ce484222325ULL ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  for (; i < s.size(); ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 0x100000001b3ULL;
  h ^= h >> 32;
  return h * 0x9E3779B97F4A7C15ULL;
}

int32_t StringPool::intern(std::string_view s) {
  const uint64_t h = hash(s);
  const uint32_t tag = static_cast<uint32_t>(h >> 32);
  size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    int32_t slot = slots_[i];
    if (slot == 0) {
      const int32_t id = size();
      data_.insert(data_.end(), s.begin(), s.end());
      offsets_.push_back(static_cast<int64_t>(data_.size()));
      slots_[i] = id + 1;
      slot_hash_[i] = tag;
      if (static_cast<size_t>(id + 1) * 2 > slots_.size()) grow();
      return id;
    }
    if (slot_hash_[i] == tag && at(slot - 1) == s) return slot - 1;
  }
}

void StringPool::grow() {
  std::vector<int32_t> old = std::move(slots_);
  slots_.assign(old.size() * 2, 0);
  slot_hash_.assign(old.size() * 2, 0);
  const size_t mask = slots_.size() - 1;
  for (int32_t slot : old) {
    if (slot == 0) continue;
    const uint64_t h = hash(at(slot - 1));
    size_t i = h & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = slot;
    slot_hash_[i] = static_cast<uint32_t>(h >> 32);
  }
}

}  // namespace hta
