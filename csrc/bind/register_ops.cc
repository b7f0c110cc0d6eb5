// hta_fast._core.ops: the generic kernels of csrc/ops over numpy columns. Each call checks its
// column lengths, releases the GIL around the kernel and hands the results back without a copy.
// hta_fast/ops.py is the public face (dtype conversion, named results); these take exact dtypes.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>

#include "bind/numpy_owner.h"
#include "ops/class_sweep.h"
#include "ops/group_gaps.h"
#include "ops/group_sort.h"
#include "ops/grouped_union.h"
#include "ops/interval_set.h"
#include "ops/occupancy.h"
#include "ops/step_counter.h"
#include "ops/weighted_stats.h"

namespace py = pybind11;
using hta::bind::to_numpy;

namespace {

template <class T>
using Col = py::array_t<T, py::array::c_style>;

// The length of a one-dimensional column; the columns of one call must agree.
size_t length(const py::array& a, const char* name) {
  if (a.ndim() != 1) throw py::value_error(std::string(name) + " must be one-dimensional");
  return static_cast<size_t>(a.size());
}
size_t same_length(std::initializer_list<std::pair<const py::array*, const char*>> cols) {
  const size_t n = length(*cols.begin()->first, cols.begin()->second);
  for (const auto& [a, name] : cols) {
    if (length(*a, name) != n)
      throw py::value_error(std::string(name) + " has " + std::to_string(a->size()) + " rows, " +
                            cols.begin()->second + " has " + std::to_string(n));
  }
  return n;
}

py::tuple to_python(hta::ops::IntervalSet&& s) {
  return py::make_tuple(to_numpy(std::move(s.start)), to_numpy(std::move(s.end)));
}

py::tuple union_(const Col<int64_t>& start, const Col<int64_t>& end) {
  const size_t n = same_length({{&start, "starts"}, {&end, "ends"}});
  hta::ops::IntervalSet r;
  {
    py::gil_scoped_release release;
    r = hta::ops::interval_union(start.data(), end.data(), n);
  }
  return to_python(std::move(r));
}

int64_t total_length(const Col<int64_t>& start, const Col<int64_t>& end) {
  const size_t n = same_length({{&start, "starts"}, {&end, "ends"}});
  py::gil_scoped_release release;
  return hta::ops::union_length(start.data(), end.data(), n);
}

template <class Op>
py::tuple set_op(const Col<int64_t>& as, const Col<int64_t>& ae, const Col<int64_t>& bs,
                 const Col<int64_t>& be, Op op) {
  const size_t na = same_length({{&as, "a_starts"}, {&ae, "a_ends"}});
  const size_t nb = same_length({{&bs, "b_starts"}, {&be, "b_ends"}});
  hta::ops::IntervalSet r;
  {
    py::gil_scoped_release release;
    r = op(hta::ops::interval_union(as.data(), ae.data(), na),
           hta::ops::interval_union(bs.data(), be.data(), nb));
  }
  return to_python(std::move(r));
}

py::tuple grouped_union(const Col<int64_t>& group, const Col<int64_t>& start,
                        const Col<int64_t>& end) {
  const size_t n = same_length({{&group, "group"}, {&start, "starts"}, {&end, "ends"}});
  hta::ops::GroupedIntervals r;
  {
    py::gil_scoped_release release;
    r = hta::ops::grouped_union(group.data(), start.data(), end.data(), n);
  }
  return py::make_tuple(to_numpy(std::move(r.group)), to_numpy(std::move(r.start)),
                        to_numpy(std::move(r.end)));
}

py::tuple grouped_total(const Col<int64_t>& group, const Col<int64_t>& start,
                        const Col<int64_t>& end) {
  const size_t n = same_length({{&group, "group"}, {&start, "starts"}, {&end, "ends"}});
  hta::ops::GroupTotals r;
  {
    py::gil_scoped_release release;
    r = hta::ops::grouped_total(group.data(), start.data(), end.data(), n);
  }
  return py::make_tuple(to_numpy(std::move(r.group)), to_numpy(std::move(r.total)));
}

py::array_t<int64_t> class_sweep(const Col<int64_t>& start, const Col<int64_t>& end,
                                 const Col<uint8_t>& cls, int n_classes) {
  const size_t n = same_length({{&start, "starts"}, {&end, "ends"}, {&cls, "classes"}});
  std::vector<int64_t> r;
  {
    py::gil_scoped_release release;
    r = hta::ops::class_sweep(start.data(), end.data(), cls.data(), n, n_classes);
  }
  return to_numpy(std::move(r));
}

py::tuple grouped_class_sweep(const Col<int64_t>& group, const Col<int64_t>& start,
                              const Col<int64_t>& end, const Col<uint8_t>& cls, int n_classes) {
  const size_t n =
      same_length({{&group, "group"}, {&start, "starts"}, {&end, "ends"}, {&cls, "classes"}});
  hta::ops::GroupedClassSweep r;
  {
    py::gil_scoped_release release;
    r = hta::ops::grouped_class_sweep(group.data(), start.data(), end.data(), cls.data(), n,
                                      n_classes);
  }
  const size_t rows = r.group.size();
  const size_t width = size_t{1} << n_classes;
  return py::make_tuple(to_numpy(std::move(r.group)), to_numpy(std::move(r.time), rows, width));
}

py::array_t<int64_t> group_order(const Col<int64_t>& group, const Col<int64_t>& key) {
  const size_t n = same_length({{&group, "group"}, {&key, "key"}});
  std::vector<int64_t> r;
  {
    py::gil_scoped_release release;
    r = hta::ops::group_order(group.data(), key.data(), n);
  }
  return to_numpy(std::move(r));
}

py::tuple group_gaps(const Col<int64_t>& group, const Col<int64_t>& start, const Col<int64_t>& end,
                     bool touching) {
  const size_t n = same_length({{&group, "group"}, {&start, "starts"}, {&end, "ends"}});
  hta::ops::Gaps r;
  {
    py::gil_scoped_release release;
    r = hta::ops::group_gaps(group.data(), start.data(), end.data(), n, touching);
  }
  return py::make_tuple(to_numpy(std::move(r.group)), to_numpy(std::move(r.start)),
                        to_numpy(std::move(r.end)), to_numpy(std::move(r.next_index)));
}

py::tuple occupancy(const Col<int64_t>& group, const Col<int64_t>& enter,
                    const Col<int64_t>& leave) {
  const size_t n = same_length({{&group, "group"}, {&enter, "enter"}, {&leave, "leave"}});
  hta::ops::Occupancy r;
  {
    py::gil_scoped_release release;
    r = hta::ops::occupancy(group.data(), enter.data(), leave.data(), n);
  }
  return py::make_tuple(to_numpy(std::move(r.item)), to_numpy(std::move(r.entering)),
                        to_numpy(std::move(r.group)), to_numpy(std::move(r.ts)),
                        to_numpy(std::move(r.level)));
}

template <class T>
py::tuple step_counter(const Col<int64_t>& group, const Col<int64_t>& ts, const Col<T>& delta) {
  const size_t n = same_length({{&group, "group"}, {&ts, "ts"}, {&delta, "delta"}});
  hta::ops::StepSeries<T> r;
  {
    py::gil_scoped_release release;
    r = hta::ops::step_counter<T>(group.data(), ts.data(), delta.data(), n);
  }
  return py::make_tuple(to_numpy(std::move(r.group)), to_numpy(std::move(r.ts)),
                        to_numpy(std::move(r.value)));
}

py::dict weighted_stats(const Col<int64_t>& group, const Col<int64_t>& ts, const Col<double>& value,
                        const std::optional<Col<int64_t>>& end_ts, const Col<double>& quantiles,
                        const Col<double>& thresholds) {
  const size_t n = same_length({{&group, "group"}, {&ts, "ts"}, {&value, "value"}});
  const size_t n_end = end_ts ? length(*end_ts, "end_ts") : 0;
  const size_t n_q = length(quantiles, "quantiles"), n_t = length(thresholds, "thresholds");
  hta::ops::WeightedStats r;
  {
    py::gil_scoped_release release;
    r = hta::ops::weighted_stats(group.data(), ts.data(), value.data(), n,
                                 end_ts ? end_ts->data() : nullptr, n_end, quantiles.data(), n_q,
                                 thresholds.data(), n_t);
  }
  const size_t rows = r.group.size();
  py::dict out;
  out["groups"] = to_numpy(std::move(r.group));
  out["duration"] = to_numpy(std::move(r.duration));
  out["mean"] = to_numpy(std::move(r.mean));
  out["min"] = to_numpy(std::move(r.min));
  out["max"] = to_numpy(std::move(r.max));
  out["std"] = to_numpy(std::move(r.std));
  out["quantiles"] = to_numpy(std::move(r.quantile), rows, n_q);
  out["time_at_or_above"] = to_numpy(std::move(r.time_at_or_above), rows, n_t);
  out["change_point_mean"] = to_numpy(std::move(r.change_point_mean));
  return out;
}

}  // namespace

void register_ops(py::module_& m) {
  auto ops =
      m.def_submodule("ops", "generic kernels over int64 nanosecond columns (see hta_fast.ops)");
  ops.def("union", &union_, py::arg("starts"), py::arg("ends"));
  ops.def("total_length", &total_length, py::arg("starts"), py::arg("ends"));
  ops.def(
      "intersect",
      [](const Col<int64_t>& as, const Col<int64_t>& ae, const Col<int64_t>& bs,
         const Col<int64_t>& be) { return set_op(as, ae, bs, be, hta::ops::intersect); },
      py::arg("a_starts"), py::arg("a_ends"), py::arg("b_starts"), py::arg("b_ends"));
  ops.def(
      "difference",
      [](const Col<int64_t>& as, const Col<int64_t>& ae, const Col<int64_t>& bs,
         const Col<int64_t>& be) { return set_op(as, ae, bs, be, hta::ops::difference); },
      py::arg("a_starts"), py::arg("a_ends"), py::arg("b_starts"), py::arg("b_ends"));
  ops.def("grouped_union", &grouped_union, py::arg("group"), py::arg("starts"), py::arg("ends"));
  ops.def("grouped_total", &grouped_total, py::arg("group"), py::arg("starts"), py::arg("ends"));
  ops.def("class_sweep", &class_sweep, py::arg("starts"), py::arg("ends"), py::arg("classes"),
          py::arg("n_classes"));
  ops.def("grouped_class_sweep", &grouped_class_sweep, py::arg("group"), py::arg("starts"),
          py::arg("ends"), py::arg("classes"), py::arg("n_classes"));
  ops.def("group_order", &group_order, py::arg("group"), py::arg("key"));
  ops.def("group_gaps", &group_gaps, py::arg("group"), py::arg("starts"), py::arg("ends"),
          py::arg("touching") = false);
  ops.def("occupancy", &occupancy, py::arg("group"), py::arg("enter"), py::arg("leave"));
  ops.def("step_counter_f64", &step_counter<double>, py::arg("group"), py::arg("ts"),
          py::arg("delta"));
  ops.def("step_counter_i64", &step_counter<int64_t>, py::arg("group"), py::arg("ts"),
          py::arg("delta"));
  ops.def("weighted_stats", &weighted_stats, py::arg("group"), py::arg("ts"), py::arg("value"),
          py::arg("end_ts"), py::arg("quantiles"), py::arg("thresholds"));
}
