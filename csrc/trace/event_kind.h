// What an event is (from its category) and, for GPU events, what class of work it does.
// Declared once here: the names are the Python enums' (hta_fast.EventKind and KernelClass,
// built by the binding) and the labels of the Arrow dictionary columns. Append only.
#pragma once
#include <cstdint>
#include <string_view>

#include "trace/column_spec.h"

namespace hta {

// X(enumerator, Python name, value)
#define HTA_EVENT_KINDS(X)                      \
  X(kOther, other, 0)                           \
  X(kCpuOp, cpu_op, 1)                          \
  X(kUserAnnotation, user_annotation, 2)        \
  X(kPythonFunction, python_function, 3)        \
  X(kRuntime, runtime, 4)                       \
  X(kDriver, driver, 5)                         \
  X(kKernel, kernel, 6)                         \
  X(kMemcpy, memcpy, 7)                         \
  X(kMemset, memset, 8)                         \
  X(kGpuUserAnnotation, gpu_user_annotation, 9) \
  X(kSync, sync, 10)

#define HTA_KERNEL_CLASSES(X) \
  X(kNone, NONE, 0)           \
  X(kComp, COMP, 1)           \
  X(kComm, COMM, 2)           \
  X(kMem, MEM, 3)             \
  X(kSync, SYNC, 4)

#define HTA_ENUMERATOR(id, name, value) id = value,
#define HTA_ENUM_LABEL(id, name, value) {value, #name},
enum class EventKind : uint8_t { HTA_EVENT_KINDS(HTA_ENUMERATOR) };
enum class KernelClass : uint8_t { HTA_KERNEL_CLASSES(HTA_ENUMERATOR) };
constexpr EnumLabel kEventKindLabels[] = {HTA_EVENT_KINDS(HTA_ENUM_LABEL)};
constexpr EnumLabel kKernelClassLabels[] = {HTA_KERNEL_CLASSES(HTA_ENUM_LABEL)};
#undef HTA_ENUM_LABEL
#undef HTA_ENUMERATOR

// Category -> kind, across eras and vendors (legacy capitalised names, HIP calls labelled
// cuda_runtime, MTIA runtime).
EventKind kind_of_category(std::string_view cat);

// The one definition of "GPU work" (hta_fast.schema.GPU_KINDS reads it through the binding).
constexpr bool is_gpu_kind(EventKind k) {
  return k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset ||
         k == EventKind::kGpuUserAnnotation || k == EventKind::kSync;
}

}  // namespace hta
