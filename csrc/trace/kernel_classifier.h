// Kernel name -> class. User rules (regex searched in the name) are tried first, then the
// built-in ones; a kernel no rule matches is compute.
#pragma once
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trace/event_kind.h"

namespace hta {

class KernelClassifier {
 public:
  explicit KernelClassifier(const std::vector<std::pair<std::string, int>>& user_rules);
  KernelClass classify(EventKind kind, std::string_view name) const;

 private:
  std::vector<std::pair<std::regex, KernelClass>> rules_;
};

}  // namespace hta
