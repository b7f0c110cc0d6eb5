#include "trace/pages_ahead.h"

#include <algorithm>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace hta {
namespace {

constexpr uintptr_t kPage = 4096;
constexpr uintptr_t kBatch = 2 * kPage;  // below this a call saves less than it costs

}  // namespace

bool populate_pages(void* begin, size_t bytes) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  const auto from = (reinterpret_cast<uintptr_t>(begin) + kPage - 1) & ~(kPage - 1);
  const auto to = (reinterpret_cast<uintptr_t>(begin) + bytes) & ~(kPage - 1);
  if (to <= from) return true;
  return madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE) == 0;
#else
  (void)begin;
  (void)bytes;
  return false;
#endif
}

void PagesAhead::before_rows(TraceColumns& t, const std::vector<size_t>& rows) {
  if (!supported_) return;
  size_t c = 0, table = 0;
  t.for_each_table([&](const char*, auto& tab) {
    const size_t ahead = rows[table++];
    tab.for_each_column([&](const char*, auto& col) {
      if (c == columns_.size()) columns_.emplace_back();
      Frontier& f = columns_[c++];
      using T = typename std::decay_t<decltype(col)>::value_type;
      const auto base = reinterpret_cast<uintptr_t>(col.data());
      const uintptr_t written = base + col.size() * sizeof(T);
      if (f.data != col.data()) f = {col.data(), written};  // a new block: start at its end
      f.populated = std::max(f.populated, written);
      const uintptr_t want = base + std::min(col.size() + ahead, col.capacity()) * sizeof(T);
      // From the page that holds the frontier (written in part already: populating a
      // resident page is a no-op).
      const uintptr_t from = f.populated & ~(kPage - 1);
      if (want < from + kBatch) return;  // a narrow column's rows wait for a later chunk
      if (!populate_pages(reinterpret_cast<void*>(from), want - from)) {
        supported_ = false;
        return;
      }
      f.populated = want;
    });
  });
}

}  // namespace hta
