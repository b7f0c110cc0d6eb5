// hta_fast._core.graph: the dependency graph, its calibration, replay and critical path over
// numpy columns. hta_fast/model/dependency_graph.py builds the columns and names the results.
#include <pybind11/native_enum.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "bind/numpy_owner.h"
#include "graph/calibrate.h"
#include "graph/dependency_graph.h"
#include "graph/replay.h"

namespace py = pybind11;
using hta::bind::to_numpy;

namespace {

template <class T>
using Col = py::array_t<T, py::array::c_style>;

// A built graph and the measured times of its nodes.
struct PyGraph {
  hta::graph::Graph g;
  std::vector<int64_t> measured;
};

void check_length(const py::array& a, const char* name, size_t n) {
  if (a.ndim() != 1 || static_cast<size_t>(a.size()) != n)
    throw py::value_error(std::string(name) + " must be one-dimensional with " + std::to_string(n) +
                          " rows, like ts");
}

PyGraph build(const Col<int64_t>& ts, const Col<int64_t>& dur, const Col<int64_t>& lane,
              const Col<uint8_t>& is_gpu, const Col<int64_t>& parent, const Col<int64_t>& launch,
              const Col<int64_t>& corr, const Col<uint8_t>& sync_kind,
              const Col<int64_t>& wait_lane, const Col<int64_t>& wait_corr,
              const Col<int64_t>& target_lane, int64_t window_start,
              std::optional<Col<int64_t>> release_from, std::optional<Col<int64_t>> held_by) {
  const auto n = static_cast<size_t>(ts.size());
  check_length(ts, "ts", n);
  check_length(dur, "dur", n);
  check_length(lane, "lane", n);
  check_length(is_gpu, "is_gpu", n);
  check_length(parent, "parent", n);
  check_length(launch, "launch", n);
  check_length(corr, "corr", n);
  check_length(sync_kind, "sync_kind", n);
  check_length(wait_lane, "wait_lane", n);
  check_length(wait_corr, "wait_corr", n);
  check_length(target_lane, "target_lane", n);
  if (release_from) {
    check_length(*release_from, "release_from", n);
    for (size_t i = 0; i < n; ++i)
      if (release_from->data()[i] >= static_cast<int64_t>(2 * n))
        throw py::value_error("release_from of row " + std::to_string(i) + " is not a node");
  }
  const auto sn = static_cast<int64_t>(n);
  if (held_by) {
    check_length(*held_by, "held_by", n);
    for (size_t i = 0; i < n; ++i)
      if (held_by->data()[i] >= sn)
        throw py::value_error("held_by of row " + std::to_string(i) + " points past the events");
  }
  for (size_t i = 0; i < n; ++i) {
    if (parent.data()[i] >= sn || launch.data()[i] >= sn)
      throw py::value_error("parent or launch row " + std::to_string(i) +
                            " points past the events");
  }
  hta::graph::GraphInput in;
  in.n = n;
  in.ts = ts.data();
  in.dur = dur.data();
  in.lane = lane.data();
  in.is_gpu = is_gpu.data();
  in.parent = parent.data();
  in.launch = launch.data();
  in.corr = corr.data();
  in.sync_kind = sync_kind.data();
  in.wait_lane = wait_lane.data();
  in.wait_corr = wait_corr.data();
  in.target_lane = target_lane.data();
  in.window_start = window_start;
  if (release_from) in.release_from = release_from->data();
  if (held_by) in.held_by = held_by->data();
  PyGraph out;
  {
    py::gil_scoped_release release;
    try {
      out.g = hta::graph::build_graph(in);
    } catch (const std::runtime_error& e) {
      py::gil_scoped_acquire acquire;
      throw py::value_error(e.what());
    }
    out.measured = hta::graph::measured_times(in);
  }
  return out;
}

Col<int64_t> copy_of(const std::vector<int64_t>& v) { return to_numpy(std::vector<int64_t>(v)); }

std::vector<int64_t> weights_of(const PyGraph& g, const Col<int64_t>& weight) {
  check_length(weight, "weight", g.g.src.size());
  return std::vector<int64_t>(weight.data(), weight.data() + weight.size());
}

}  // namespace

void register_graph(py::module_& m) {
  auto sub = m.def_submodule("graph", "dependency graph, replay and critical path");
  // The edge types and sync kinds, declared once (graph/dependency_graph.h) and read by
  // hta_fast.model.graph (edge names, skip masks) and sync_calls (what a call waits on).
  {
    py::native_enum<hta::graph::EdgeType> edges(sub, "EdgeType", "enum.IntEnum",
                                                "What an edge's time is.");
#define HTA_BIND_VALUE(name, code) edges.value(#name, hta::graph::EdgeType::name);
    HTA_EDGE_TYPES(HTA_BIND_VALUE)
#undef HTA_BIND_VALUE
    edges.finalize();
    py::native_enum<hta::graph::SyncKind> kinds(sub, "SyncKind", "enum.IntEnum",
                                                "What a CPU call waits on.");
#define HTA_BIND_VALUE(name, code) kinds.value(#name, hta::graph::SyncKind::name);
    HTA_SYNC_KINDS(HTA_BIND_VALUE)
#undef HTA_BIND_VALUE
    kinds.finalize();
  }
  py::class_<PyGraph>(sub, "Graph")
      .def_property_readonly("n_events", [](const PyGraph& g) { return g.g.n_events; })
      .def_property_readonly("src", [](const PyGraph& g) { return copy_of(g.g.src); })
      .def_property_readonly("dst", [](const PyGraph& g) { return copy_of(g.g.dst); })
      .def_property_readonly(
          "type", [](const PyGraph& g) { return to_numpy(std::vector<uint8_t>(g.g.type)); })
      .def_property_readonly("measured", [](const PyGraph& g) { return copy_of(g.measured); })
      .def("calibrate",
           [](const PyGraph& g) {
             hta::graph::Calibration c;
             {
               py::gil_scoped_release release;
               c = hta::graph::calibrate(g.g, g.measured);
             }
             return py::make_tuple(to_numpy(std::move(c.weight)), to_numpy(std::move(c.binding)));
           })
      .def(
          "replay",
          [](const PyGraph& g, const Col<int64_t>& weight, uint32_t skip_types,
             std::optional<Col<int64_t>> floor) {
            auto w = weights_of(g, weight);
            std::vector<int64_t> f;
            if (floor) {
              check_length(*floor, "floor", 2 * g.g.n_events + 1);
              f.assign(floor->data(), floor->data() + floor->size());
            }
            std::vector<int64_t> t;
            {
              py::gil_scoped_release release;
              t = hta::graph::replay(g.g, w, skip_types, f);
            }
            return to_numpy(std::move(t));
          },
          py::arg("weight"), py::arg("skip_types") = 0, py::arg("floor") = py::none())
      .def(
          "critical_path",
          [](const PyGraph& g, const Col<int64_t>& weight, const Col<int64_t>& times,
             uint32_t skip_types, int64_t from) {
            auto w = weights_of(g, weight);
            check_length(times, "times", 2 * g.g.n_events + 1);
            if (from >= static_cast<int64_t>(2 * g.g.n_events + 1))
              throw std::invalid_argument("critical_path: `from` is not a node of this graph");
            std::vector<int64_t> t(times.data(), times.data() + times.size());
            std::vector<int64_t> p;
            {
              py::gil_scoped_release release;
              p = hta::graph::critical_path(g.g, w, t, skip_types, from);
            }
            return to_numpy(std::move(p));
          },
          py::arg("weight"), py::arg("times"), py::arg("skip_types") = 0, py::arg("from_node") = -1)
      .def(
          "critical_paths",
          [](const PyGraph& g, const Col<int64_t>& weight, const Col<int64_t>& times,
             uint32_t skip_types, const Col<int64_t>& from, const Col<int64_t>& stop_at) {
            auto w = weights_of(g, weight);
            const size_t nodes = 2 * g.g.n_events + 1;
            check_length(times, "times", nodes);
            check_length(stop_at, "stop_at", static_cast<size_t>(from.size()));
            std::vector<int64_t> t(times.data(), times.data() + times.size());
            std::vector<int64_t> f(from.data(), from.data() + from.size());
            for (int64_t v : f)
              if (v < 0 || static_cast<size_t>(v) >= nodes)
                throw std::invalid_argument("critical_paths: node " + std::to_string(v) +
                                            " is not in the graph");
            std::vector<int64_t> s(stop_at.data(), stop_at.data() + stop_at.size());
            std::vector<int64_t> p, offsets;
            {
              py::gil_scoped_release release;
              p = hta::graph::critical_paths(g.g, w, t, skip_types, f, s, offsets);
            }
            return py::make_tuple(to_numpy(std::move(p)), to_numpy(std::move(offsets)));
          },
          py::arg("weight"), py::arg("times"), py::arg("skip_types"), py::arg("from_nodes"),
          py::arg("stop_at"));
  sub.def("build", &build, py::arg("ts"), py::arg("dur"), py::arg("lane"), py::arg("is_gpu"),
          py::arg("parent"), py::arg("launch"), py::arg("corr"), py::arg("sync_kind"),
          py::arg("wait_lane"), py::arg("wait_corr"), py::arg("target_lane"),
          py::arg("window_start"), py::arg("release_from") = py::none(),
          py::arg("held_by") = py::none());
}
