// The C++ unit tests' one main (doctest's): every csrc/<folder>/<name>_test.cc links into one
// executable, which ctest runs folder by folder (CMakeLists.txt, HTA_FAST_CPP_TESTS).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
