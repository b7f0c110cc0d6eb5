// StringPool (trace/string_pool.h): one id per distinct text, dense from 0 in order of first
// sight, the text back by id, and a generation that tells caches when ids may have changed.
#include "trace/string_pool.h"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hta {
namespace {

TEST_CASE("equal texts share one id, distinct texts get their own, dense from 0") {
  StringPool pool;
  CHECK(pool.size() == 0);
  CHECK(pool.intern("aten::mm") == 0);
  CHECK(pool.intern("cudaLaunchKernel") == 1);
  CHECK(pool.intern("aten::mm") == 0);
  const std::string copy = "cudaLaunchKernel";  // equal text at another address
  CHECK(pool.intern(copy) == 1);
  CHECK(pool.intern("aten::m") == 2);  // a prefix is another text
  CHECK(pool.intern("aten::mmm") == 3);
  CHECK(pool.size() == 4);
  CHECK(pool.at(0) == "aten::mm");
  CHECK(pool.at(1) == "cudaLaunchKernel");
  CHECK(pool.at(2) == "aten::m");
  CHECK(pool.at(3) == "aten::mmm");
}

TEST_CASE("the empty text is a text with an id of its own") {
  StringPool pool;
  CHECK(pool.intern("x") == 0);
  CHECK(pool.intern("") == 1);
  CHECK(pool.intern(std::string_view()) == 1);
  CHECK(pool.at(1).empty());
  CHECK(pool.at(0) == "x");
  CHECK(pool.size() == 2);
}

TEST_CASE("texts differing in one byte anywhere are apart, at every length up to 40") {
  // The hash reads the tail as overlapping words or three sampled bytes, and the comparison
  // as two overlapping loads: a byte changed at each place of each length must still count.
  StringPool pool;
  std::unordered_map<std::string, int32_t> ids;
  for (size_t n = 0; n <= 40; ++n) {
    const std::string base(n, 'a');
    ids.emplace(base, pool.intern(base));
    for (size_t k = 0; k < n; ++k) {
      std::string s = base;
      s[k] = 'b';
      ids.emplace(s, pool.intern(s));
    }
  }
  CHECK(static_cast<size_t>(pool.size()) == ids.size());
  for (const auto& [text, id] : ids) {
    CAPTURE(text);
    CHECK(pool.intern(text) == id);
    CHECK(pool.at(id) == text);
  }
}

TEST_CASE("bytes of any value, NUL included, are part of the text") {
  StringPool pool;
  const std::string a("a\0b", 3), b("a\0c", 3), c("a", 1);
  const std::string high("\xff\xfe\x80", 3);
  CHECK(pool.intern(a) == 0);
  CHECK(pool.intern(b) == 1);
  CHECK(pool.intern(c) == 2);
  CHECK(pool.intern(high) == 3);
  CHECK(pool.intern(a) == 0);
  CHECK(pool.at(0) == a);
  CHECK(pool.at(0).size() == 3);
  CHECK(pool.at(3) == high);
}

TEST_CASE("many texts: ids hold across the table's growth") {
  StringPool pool;
  constexpr int kCount = 200000;  // the table starts at 1024 slots and doubles many times
  const auto text = [](int i) { return "kernel_" + std::to_string(i * 7919 % 1000003); };
  for (int i = 0; i < kCount; ++i) REQUIRE(pool.intern(text(i)) == i);
  CHECK(pool.size() == kCount);
  for (int i = 0; i < kCount; ++i) {
    REQUIRE(pool.intern(text(i)) == i);
    REQUIRE(pool.at(i) == text(i));
  }
  CHECK(pool.size() == kCount);
}

TEST_CASE("data and offsets are Arrow's large_string layout") {
  StringPool pool;
  pool.intern("ab");
  pool.intern("");
  pool.intern("cde");
  CHECK(std::string(pool.data().begin(), pool.data().end()) == "abcde");
  CHECK(pool.offsets() == std::vector<int64_t>{0, 2, 2, 5});
}

TEST_CASE("clear forgets every text and starts a new generation") {
  StringPool pool;
  for (int i = 0; i < 5000; ++i) pool.intern(std::to_string(i));
  const uint64_t before = pool.generation();
  pool.clear();
  CHECK(pool.size() == 0);
  CHECK(pool.generation() != before);
  CHECK(pool.intern("4999") == 0);  // not the id it had
  CHECK(pool.intern("0") == 1);
  CHECK(pool.intern("4999") == 0);
  CHECK(pool.at(0) == "4999");
}

TEST_CASE("generations: a copy is a pool of its own, a move takes the contents' along") {
  StringPool a;
  StringPool b;
  CHECK(a.generation() != b.generation());
  a.intern("x");
  const uint64_t ga = a.generation();
  CHECK(a.generation() == ga);  // interning keeps the ids below size(): same generation

  StringPool copy(a);
  CHECK(copy.generation() != ga);
  CHECK(copy.intern("x") == 0);
  CHECK(copy.intern("y") == 1);
  CHECK(a.size() == 1);  // the original is untouched

  b = a;
  CHECK(b.generation() != ga);
  CHECK(b.intern("x") == 0);

  StringPool moved(std::move(a));
  CHECK(moved.generation() == ga);
  CHECK(a.generation() != ga);  // the move's promise
  CHECK(moved.intern("x") == 0);
  CHECK(moved.at(0) == "x");

  StringPool assigned;
  const uint64_t gm = moved.generation();
  assigned = std::move(moved);
  CHECK(assigned.generation() == gm);
  CHECK(moved.generation() != gm);
  CHECK(assigned.intern("x") == 0);
}

TEST_CASE("a moved-from pool, once cleared, is an empty pool again") {
  StringPool a;
  a.intern("x");
  StringPool b(std::move(a));
  a.clear();
  CHECK(a.size() == 0);
  CHECK(a.intern("y") == 0);
  CHECK(a.intern("x") == 1);
  CHECK(a.intern("y") == 0);
  for (int i = 0; i < 3000; ++i) a.intern(std::to_string(i));
  CHECK(a.intern("x") == 1);
  CHECK(b.at(0) == "x");
}

}  // namespace
}  // namespace hta
