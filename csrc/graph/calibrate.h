// Edge weights read off the measured timeline, so that replaying the graph reproduces it.
//
// Why: a rigid edge (a CPU or GPU duration, a gap between a thread's calls) is the measured
// difference of its ends. A wait edge (launch, stream order, cross-stream, sync) is only known
// where it decided when its target happened: of a node's wait edges, the one from the latest
// source is binding and gets the measured difference; the others get the smaller of that
// difference and the median binding weight of their type (a typical launch latency, kernel
// gap or wake-up time), so that in a what-if they still cost what such a wait usually costs.
// No weight exceeds its measured difference, so the replay meets every measured time.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/dependency_graph.h"

namespace hta::graph {

struct Calibration {
  std::vector<int64_t> weight;   // per edge, ns
  std::vector<uint8_t> binding;  // per edge: 1 where it decided its target's time
};

Calibration calibrate(const Graph& g, const std::vector<int64_t>& measured);

}  // namespace hta::graph
