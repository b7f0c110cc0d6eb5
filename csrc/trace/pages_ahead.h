// PagesAhead: backs the pages that a trace's columns are about to be written with, a batch
// at a time, before they are written. Each first write of a fresh 4 KiB page otherwise takes
// a fault, and the loader writes tens of thousands of them: on the machines measured a fault
// cost 1.7-2.2 us, a page populated in a batch 1.1-1.8 us (2 pages 1.8, 4 or more 1.1-1.5),
// and the faults were some 15-20 % of a load's CPU. Only the rows expected next are
// populated, fewer as the input's end nears, so the peak memory grows by little.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "trace/trace_columns.h"

namespace hta {

// Makes [begin, begin + bytes) resident now, in one call (MADV_POPULATE_WRITE): the whole
// pages inside the range only. Returns false where the kernel cannot (before Linux 5.14, or
// not Linux), which leaves the pages to be faulted in as they are written.
bool populate_pages(void* begin, size_t bytes);

class PagesAhead {
 public:
  // Populates each column's room for the `rows[t]` rows its table (in for_each_table order)
  // is expected to take next, within its capacity, two pages or more at a time.
  void before_rows(TraceColumns& t, const std::vector<size_t>& rows);

 private:
  struct Frontier {
    const void* data = nullptr;  // the column's block when last seen (a regrowth moves it)
    uintptr_t populated = 0;     // the end of what was populated (or written) in it
  };
  std::vector<Frontier> columns_;
  bool supported_ = true;
};

}  // namespace hta
