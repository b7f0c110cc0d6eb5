#include "trace/kernel_classifier.h"

#include <stdexcept>

namespace hta {
namespace {

// The built-in rules are tested on a kernel's function name only (its qualified name without
// the return type, template arguments and parameters): std::regex_search does not stop at a
// failed '^' but tries every position, templated names run to thousands of characters, and
// a template argument such as `nccl` must not make a kernel communication.
struct PrefixRule {
  std::string_view prefix;
  KernelClass cls;
};
constexpr PrefixRule kBuiltinPrefixes[] = {
    // Collective libraries: NCCL (ncclKernel_*, ncclDevKernel_*), RCCL (whose kernels are
    // also named nccl*), HCCL, MSCCL.
    {"nccl", KernelClass::kComm},
    {"rccl", KernelClass::kComm},
    {"hccl", KernelClass::kComm},
    {"msccl", KernelClass::kComm},
    // Copies and fills that some runtimes report as kernels.
    {"Memcpy", KernelClass::kMem},
    {"Memset", KernelClass::kMem},
    {"dma", KernelClass::kMem},
};
// Communication written outside the collective libraries, found anywhere in the function
// name (namespaces included): DeepEP's expert-parallel all-to-all (deep_ep::, dpsk::ep::),
// NVSHMEM, MSCCL++, PyTorch's symmetric-memory collectives (multimem_*, one-/two-shot
// all-reduce), and the custom all-reduce kernels of vLLM, SGLang and TensorRT-LLM.
constexpr std::string_view kCommParts[] = {
    "deep_ep::",
    "dpsk::ep::",
    "nvshmem",
    "mscclpp::",
    "symm_mem",
    "symmetric_memory::",
    "multimem_",
    "one_shot_all_reduce",
    "two_shot_all_reduce",
    "oneShotAllReduce",
    "twoShotAllReduce",
    "cross_device_reduce",
    "custom_all_reduce",
    "allreduce_fusion_kernel",
};

constexpr std::string_view kAnonymous = "(anonymous namespace)";

// The qualified function name of a kernel: "void ns::f<T>(int)" -> "ns::f". Namespaces
// spelled "(anonymous namespace)" are kept.
std::string_view function_name(std::string_view name) {
  constexpr std::string_view kVoid = "void ";
  if (name.substr(0, kVoid.size()) == kVoid) name.remove_prefix(kVoid.size());
  size_t i = 0;
  while (i < name.size()) {
    const char c = name[i];
    if (c == '(' && name.substr(i, kAnonymous.size()) == kAnonymous) {
      i += kAnonymous.size();
      continue;
    }
    if (c == '<' || c == '(') break;
    ++i;
  }
  return name.substr(0, i);
}

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
  for (const auto& [prefix, cls] : kBuiltinPrefixes) {
    if (name.substr(0, prefix.size()) == prefix) return cls;
  }
  const std::string_view function = function_name(name);
  for (const std::string_view part : kCommParts) {
    if (function.find(part) != std::string_view::npos) return KernelClass::kComm;
  }
  return KernelClass::kComp;
}

}  // namespace hta
