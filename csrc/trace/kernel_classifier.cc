#include "trace/kernel_classifier.h"

#include <stdexcept>

namespace hta {

KernelClassifier::KernelClassifier(const std::vector<std::pair<std::string, int>>& user_rules) {
  auto add = [&](const std::string& pattern, int cls) {
    if (cls < 0 || cls > static_cast<int>(KernelClass::kSync)) {
      throw std::invalid_argument("kernel class out of range for rule " + pattern);
    }
    rules_.emplace_back(std::regex(pattern, std::regex::ECMAScript | std::regex::optimize),
                        static_cast<KernelClass>(cls));
  };
  for (const auto& [pattern, cls] : user_rules) add(pattern, cls);
  // Collective libraries: NCCL, RCCL (whose kernels are also named nccl*), HCCL.
  add("^(nccl|rccl|hccl)", static_cast<int>(KernelClass::kComm));
  // Copies and fills that some runtimes report as kernels.
  add("^(Memcpy|Memset|dma)", static_cast<int>(KernelClass::kMem));
}

KernelClass KernelClassifier::classify(EventKind kind, std::string_view name) const {
  switch (kind) {
    case EventKind::kMemcpy:
    case EventKind::kMemset:
      return KernelClass::kMem;
    case EventKind::kSync:
      return KernelClass::kSync;
    case EventKind::kKernel:
      break;
    default:
      return KernelClass::kNone;
  }
  for (const auto& [re, cls] : rules_) {
    if (std::regex_search(name.begin(), name.end(), re)) return cls;
  }
  return KernelClass::kComp;
}

}  // namespace hta
