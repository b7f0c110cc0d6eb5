// The names of CUDA runtime and driver calls by their CUPTI callback id (`args.cbid`), for
// the calls that Kineto wrote without one.
//
// Two eras of Kineto name a call differently. Before 2026 it looked runtime calls up in a
// table of its own, indexed by cbid and written for CUDA 12.0 (cupti_strings.cpp,
// runtimeCbidNames before kineto #1400), and wrote "INVALID" for every cbid past its end
// (CUDA 12.2 on; cudaLaunchKernelExC before kineto #786); driver calls it looked up in a map of
// the few it registered (CuptiCbidRegistry::getName) and wrote "unknown" for the others. Since
// kineto #1400 (2026) both come from CUPTI's own callback names (cupti_strings.cpp,
// lookupCbidName), so the same call has its name in a newer trace. Both eras write the cbid
// beside the name (CuptiActivity.h, RuntimeActivity and DriverActivity visitTypedMetadata:
// `cbid`, `correlation`), which names the call in an older trace too.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace hta {

enum class CallDomain : uint8_t { kRuntime, kDriver };

// The domain of a call by its category: cuda_runtime (Runtime in older traces) or
// cuda_driver; none for any other category.
std::optional<CallDomain> call_domain(std::string_view category);

// The call's name as Kineto writes it since 2026; empty for a cbid the table does not hold.
std::string_view cuda_call_name(CallDomain domain, int64_t cbid);

// The names Kineto wrote before 2026 for a call it could not name.
inline bool is_unnamed_call(std::string_view name) {
  return name == "INVALID" || name == "unknown";
}

}  // namespace hta
