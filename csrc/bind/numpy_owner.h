// Hands std::vector columns to numpy without copying: the vector moves into a capsule
// that the array keeps alive.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <vector>

namespace hta::bind {

// A column is filled by growing and by estimates made before its rows were counted, so its
// capacity can be several times its size; what is handed over lives as long as the trace, so
// a small column's slack goes first (on thousands of small ranks it was a tenth of the
// memory; their columns are tens of KB). Not a larger one's: the copy would sit beside the
// freed original in malloc's heap (kept for reuse, malloc_policy.cc): a 300 MB trace's peak
// grew by a third of its JSON, and with copies up to 1 MB a 26 MB trace's by 2 MB (0.66 of
// its JSON, 0.58 without them). A large slack that was never written is not resident anyway.
constexpr size_t kSlackCopyMaxBytes = 256 << 10;

template <class T, class Alloc>
void drop_slack(std::vector<T, Alloc>& v) {
  if (v.capacity() * sizeof(T) <= kSlackCopyMaxBytes && v.capacity() > v.size() + v.size() / 8 + 16)
    v.shrink_to_fit();
}

template <class T, class Alloc>
pybind11::array_t<T> to_numpy(std::vector<T, Alloc>&& v) {
  using Vec = std::vector<T, Alloc>;
  drop_slack(v);
  auto* owned = new Vec(std::move(v));
  pybind11::capsule owner(owned, [](void* p) { delete static_cast<Vec*>(p); });
  return pybind11::array_t<T>({static_cast<pybind11::ssize_t>(owned->size())}, {sizeof(T)},
                              owned->data(), owner);
}

// The same for a row-major [rows][cols] matrix held in one vector of rows * cols values.
template <class T>
pybind11::array_t<T> to_numpy(std::vector<T>&& v, size_t rows, size_t cols) {
  drop_slack(v);
  auto* owned = new std::vector<T>(std::move(v));
  pybind11::capsule owner(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  const auto r = static_cast<pybind11::ssize_t>(rows), c = static_cast<pybind11::ssize_t>(cols);
  const auto item = static_cast<pybind11::ssize_t>(sizeof(T));
  return pybind11::array_t<T>({r, c}, {c * item, item}, owned->data(), owner);
}

}  // namespace hta::bind
