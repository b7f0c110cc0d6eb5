#include "trace/string_pool.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "trace/same_text.h"

namespace hta {

namespace {
constexpr size_t kFirstSlots = 1024;  // a power of two: slots are found by masking a hash
}  // namespace

StringPool::StringPool() : offsets_{0}, slots_(kFirstSlots, 0), slot_hash_(kFirstSlots, 0) {}

StringPool::StringPool(const StringPool& other)
    : data_(other.data_),
      offsets_(other.offsets_),
      slots_(other.slots_),
      slot_hash_(other.slot_hash_) {}

StringPool& StringPool::operator=(const StringPool& other) {
  if (this != &other) {
    data_ = other.data_;
    offsets_ = other.offsets_;
    slots_ = other.slots_;
    slot_hash_ = other.slot_hash_;
    generation_ = next_generation();
  }
  return *this;
}

StringPool::StringPool(StringPool&& other) noexcept
    : data_(std::move(other.data_)),
      offsets_(std::move(other.offsets_)),
      slots_(std::move(other.slots_)),
      slot_hash_(std::move(other.slot_hash_)),
      generation_(other.generation_) {
  other.generation_ = next_generation();
}

StringPool& StringPool::operator=(StringPool&& other) noexcept {
  if (this != &other) {
    data_ = std::move(other.data_);
    offsets_ = std::move(other.offsets_);
    slots_ = std::move(other.slots_);
    slot_hash_ = std::move(other.slot_hash_);
    generation_ = other.generation_;
    other.generation_ = next_generation();
  }
  return *this;
}

uint64_t StringPool::next_generation() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

void StringPool::clear() {
  data_.clear();
  offsets_.assign(1, 0);
  if (slots_.empty()) {  // moved from: a table of its own again
    slots_.assign(kFirstSlots, 0);
    slot_hash_.assign(kFirstSlots, 0);
  } else {
    std::fill(slots_.begin(), slots_.end(), 0);
  }
  generation_ = next_generation();
}

namespace {

// The 128-bit product of two words, folded to 64 bits.
uint64_t fold_mul(uint64_t a, uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

uint64_t word(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

}  // namespace

uint64_t StringPool::hash(std::string_view s) {
  // 16 bytes per multiply, and the blocks' products independent of each other (xor'ed
  // together, each keyed by its position), so long names (kernel signatures run to hundreds
  // of bytes) hash at the multiplier's throughput rather than its latency.
  const char* p = s.data();
  const size_t n = s.size();
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    h ^= fold_mul(word(p + i) ^ (0xa0761d6478bd642fULL + i),
                  word(p + i + 8) ^ 0xe7037ed1a0b428dbULL);
  }
  // The last 0-15 bytes, read as two (possibly overlapping) words or fewer bytes.
  const size_t rest = n - i;
  uint64_t a = 0, b = 0;
  if (rest >= 8) {
    a = word(p + i);
    b = word(p + n - 8);
  } else if (rest >= 4) {
    uint32_t x, y;
    std::memcpy(&x, p + i, 4);
    std::memcpy(&y, p + n - 4, 4);
    a = x;
    b = y;
  } else if (rest > 0) {
    const auto byte = [&](size_t k) {
      return static_cast<uint64_t>(static_cast<unsigned char>(p[k]));
    };
    a = byte(i) | byte(i + rest / 2) << 8 | byte(n - 1) << 16;
  }
  return fold_mul(h ^ a ^ 0x8ebc6af09c88c6e3ULL, b ^ 0x589965cc75374cc3ULL ^ n);
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
    if (slot_hash_[i] == tag && same_text(at(slot - 1), s)) return slot - 1;
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
