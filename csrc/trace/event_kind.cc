#include "trace/event_kind.h"

#include <stdexcept>

namespace hta {

EventKind kind_of_category(std::string_view cat) {
  struct Entry {
    std::string_view cat;
    EventKind kind;
  };
  static const Entry kTable[] = {
      {"cpu_op", EventKind::kCpuOp},
      {"Operator", EventKind::kCpuOp},
      {"user_annotation", EventKind::kUserAnnotation},
      {"python_function", EventKind::kPythonFunction},
      {"cuda_runtime", EventKind::kRuntime},
      {"Runtime", EventKind::kRuntime},
      {"mtia_runtime", EventKind::kRuntime},
      {"cuda_driver", EventKind::kDriver},
      {"kernel", EventKind::kKernel},
      {"Kernel", EventKind::kKernel},
      {"mtia_ccp_events", EventKind::kKernel},  // MTIA work on the device, linked by ac2g flows
      {"gpu_memcpy", EventKind::kMemcpy},
      {"Memcpy", EventKind::kMemcpy},
      {"gpu_memset", EventKind::kMemset},
      {"Memset", EventKind::kMemset},
      {"gpu_user_annotation", EventKind::kGpuUserAnnotation},
      {"cuda_sync", EventKind::kSync},
  };
  for (const Entry& e : kTable) {
    if (e.cat == cat) return e.kind;
  }
  return EventKind::kOther;
}

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
