// What an event is (from its category) and, for GPU events, what class of work it does.
// Values are part of the Arrow schema (hta_fast/schema.py names them); append only.
#pragma once
#include <cstdint>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace hta {

enum class EventKind : uint8_t {
  kOther = 0,
  kCpuOp = 1,
  kUserAnnotation = 2,
  kPythonFunction = 3,
  kRuntime = 4,
  kDriver = 5,
  kKernel = 6,
  kMemcpy = 7,
  kMemset = 8,
  kGpuUserAnnotation = 9,
  kSync = 10,
};

enum class KernelClass : uint8_t { kNone = 0, kComp = 1, kComm = 2, kMem = 3, kSync = 4 };

// Category -> kind, across eras and vendors (legacy capitalised names, HIP calls labelled
// cuda_runtime, MTIA runtime).
EventKind kind_of_category(std::string_view cat);

inline bool is_gpu_kind(EventKind k) {
  return k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset ||
         k == EventKind::kGpuUserAnnotation || k == EventKind::kSync;
}

// Kernel name -> class. User rules (regex searched in the name) are tried first, then the
// built-in ones; a kernel no rule matches is compute.
class KernelClassifier {
 public:
  explicit KernelClassifier(const std::vector<std::pair<std::string, int>>& user_rules);
  KernelClass classify(EventKind kind, std::string_view name) const;

 private:
  std::vector<std::pair<std::regex, KernelClass>> rules_;
};

}  // namespace hta
