// What this build of the core was made with (hta_fast.build_info): the gzip decoder and
// whether zstd is in (both chosen at build time by what the system offered, see
// CMakeLists.txt), the simdjson release, and the simdjson kernel the CPU runs now (chosen at
// import from the instruction sets this CPU has). Read by `hta-fast` users who ask why a load
// is slower on one machine than another, and by the wheel tests.
#include <pybind11/pybind11.h>
#include <simdjson.h>

#include <string>

namespace py = pybind11;

namespace {

py::dict build_info() {
  py::dict info;
  info["version"] = HTA_FAST_VERSION;
#ifdef HTA_HAVE_ISAL
  info["gzip"] = "isal";
#else
  info["gzip"] = "zlib";
#endif
#ifdef HTA_HAVE_ZSTD
  info["zstd"] = true;
#else
  info["zstd"] = false;
#endif
  // From the numbers: SIMDJSON_VERSION is a bare token (3.0.1), not a string, in some releases.
  info["simdjson_version"] = std::to_string(simdjson::SIMDJSON_VERSION_MAJOR) + "." +
                             std::to_string(simdjson::SIMDJSON_VERSION_MINOR) + "." +
                             std::to_string(simdjson::SIMDJSON_VERSION_REVISION);
  info["simdjson_implementation"] = std::string(simdjson::get_active_implementation()->name());
  return info;
}

}  // namespace

void register_build_info(py::module_& m) {
  m.def("build_info", &build_info,
        "What the core was built with: version, gzip ('isal' or 'zlib'), zstd (bool), "
        "simdjson_version, simdjson_implementation (the one active on this CPU).");
}
