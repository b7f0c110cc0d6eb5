// The bytes between one member of a JSON object and the next, as the profiler wrote them
// last time. The profiler writes every event of a kind with the same keys in the same order
// and the same whitespace, so the bytes from the comma after a member's value to the next
// value (`, "cat": ` or `,\n    "ts": `) are nearly always the ones that followed the same
// key before. Comparing them in one go tells the next key without reading it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "parse/arg_keys.h"
#include "trace/same_text.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hta {

// Which of the 32 bytes at `p` are `want`'s: bit i for byte i. Reads 32 bytes at both:
// callers keep `p` inside the chunk and its padding.
inline uint32_t equal_bytes_32(const char* p, const char* want) {
#if defined(__SSE2__)
  auto equal16 = [](const char* a, const char* b) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a));
    const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
    return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, y)));
  };
  return equal16(p, want) | (equal16(p + 16, want + 16) << 16);
#else
  uint32_t eq = 0;
  for (unsigned i = 0; i < 32; ++i) eq |= static_cast<uint32_t>(p[i] == want[i]) << i;
  return eq;
#endif
}

// Keys met so far, by a small id, and what followed each of them in objects of two levels
// (0: events, 1: their args). Kept from chunk to chunk by the parser that owns it.
class MemberLayout {
 public:
  static constexpr uint8_t kStart = 254;  // "before the first member"
  static constexpr uint8_t kNone = 255;   // no id: the table is full
  static constexpr size_t kMaxGap = 32;
  static constexpr int kWays = 4;

  // What the loader reads a key as, in an event and in its args.
  struct Key {
    EventKey event;
    ArgKey arg;
  };

  struct Gap {
    uint8_t len = 0;  // 0: nothing learned
    uint8_t next = kNone;
    Key kind{};         // next's, kept here to save a lookup a member
    uint32_t mask = 0;  // a bit for each of the len bytes, kept so a match need not shift
    char bytes[kMaxGap];

    // Whether the `n` bytes at `p` (32 of which can be read) are these.
    bool matches(const char* p, size_t n) const {
      return n == len && (equal_bytes_32(p, bytes) & mask) == mask;
    }
  };

  // The id of a key's text, adding it while there is room (kNone after).
  uint8_t id_of(std::string_view key) {
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (same_text(keys_[i], key)) return static_cast<uint8_t>(i);
    }
    if (keys_.size() >= kStart) return kNone;
    keys_.emplace_back(key);
    kinds_.push_back({event_key(key), arg_key(key)});
    return static_cast<uint8_t>(keys_.size() - 1);
  }
  const Key& key(uint8_t id) const { return kinds_[id]; }
  const std::string& text(uint8_t id) const { return keys_[id]; }

  // The kWays most recent successors of `prev`, the latest first: optional arguments make
  // a key's successor vary between kinds of event (mtia's operators and kernels: two ways
  // missed on 9 % of the members, each a key read and looked up).
  const Gap* after(int level, uint8_t prev) const { return gaps_[level][prev]; }

  // Remembers that `text` led from `prev`'s comma (or the object's '{') to `next`'s value,
  // in place of the oldest.
  void learn(int level, uint8_t prev, std::string_view text, uint8_t next) {
    if (next == kNone || prev == kNone || text.empty() || text.size() > kMaxGap) return;
    Gap* ways = gaps_[level][prev];
    std::copy_backward(ways, ways + kWays - 1, ways + kWays);
    ways[0].len = static_cast<uint8_t>(text.size());
    ways[0].next = next;
    ways[0].kind = kinds_[next];
    ways[0].mask = text.size() >= 32 ? ~0u : (1u << text.size()) - 1;
    std::memcpy(ways[0].bytes, text.data(), text.size());
  }

 private:
  std::vector<std::string> keys_;
  std::vector<Key> kinds_;
  // Indexed by kNone too (never learned: its gaps stay empty), so a key past the table reads
  // as "nothing learned" rather than out of bounds.
  Gap gaps_[2][256][kWays] = {};
};

}  // namespace hta
