// How freed memory is kept for reuse.
//
// Analyses allocate and free many arrays of a few hundred KB to a few MB per call. glibc hands
// such blocks straight back to the system when they are freed (they sit above its mmap
// threshold, or at a heap top above its trim threshold), so every call takes them again through
// page faults, which cost microseconds each on virtual machines: a third of the time of a call
// that builds a few million rows. Keeping blocks below 32 MB on the heap, and up to 256 MB of
// freed heap before trimming, makes repeated calls reuse warm memory. The loader still gives
// freed memory back explicitly (malloc_trim) before and after its big stages.
// HTA_FAST_MALLOC_TUNING=0, or glibc's own MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ in
// the environment, leave the allocator as it is.
#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

void tune_malloc() {
#if defined(__GLIBC__)
  const char* setting = std::getenv("HTA_FAST_MALLOC_TUNING");
  if (setting && std::strcmp(setting, "0") == 0) return;
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") || std::getenv("MALLOC_TRIM_THRESHOLD_")) return;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}
