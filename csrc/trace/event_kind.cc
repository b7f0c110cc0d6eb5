#include "trace/event_kind.h"

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

}  // namespace hta
