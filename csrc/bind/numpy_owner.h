// Hands std::vector columns to numpy without copying: the vector moves into a capsule
// that the array keeps alive.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <vector>

namespace hta::bind {

template <class T, class Alloc>
pybind11::array_t<T> to_numpy(std::vector<T, Alloc>&& v) {
  using Vec = std::vector<T, Alloc>;
  auto* owned = new Vec(std::move(v));
  pybind11::capsule owner(owned, [](void* p) { delete static_cast<Vec*>(p); });
  return pybind11::array_t<T>({static_cast<pybind11::ssize_t>(owned->size())}, {sizeof(T)},
                              owned->data(), owner);
}

}  // namespace hta::bind
