#include "trace/kernel_classifier.h"

#include <stdexcept>

namespace hta {
namespace {

// The built-in rules are name prefixes, tested as such: std::regex_search does not stop at
// a failed '^' but tries every position of the name, and templated kernel names run to
// thousands of characters.
struct PrefixRule {
  std::string_view prefix;
  KernelClass cls;
};
constexpr PrefixRule kBuiltinRules[] = {
    // Collective libraries: NCCL, RCCL (whose kernels are also named nccl*), HCCL.
    {"nccl", KernelClass::kComm},
    {"rccl", KernelClass::kComm},
    {"hccl", KernelClass::kComm},
    // Copies and fills that some runtimes report as kernels.
    {"Memcpy", KernelClass::kMem},
    {"Memset", KernelClass::kMem},
    {"dma", KernelClass::kMem},
};

}  // namespace

KernelClassifier::KernelClassifier(const std::vector<std::pair<std::string, int>>& user_rules) {
  for (const auto& [pattern, cls] : user_rules) {
    if (cls < 0 || cls > static_cast<int>(KernelClass::kSync)) {
      throw std::invalid_argument("kernel class out of range for rule " + pattern);
    }
    rules_.emplace_back(std::regex(pattern, std::regex::ECMAScript | std::regex::optimize),
                        static_cast<KernelClass>(cls));
  }
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
  for (const auto& [prefix, cls] : kBuiltinRules) {
    if (name.substr(0, prefix.size()) == prefix) return cls;
  }
  return KernelClass::kComp;
}

}  // namespace hta
