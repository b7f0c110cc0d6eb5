// place_string_ids (trace/string_ids.h): once a trace's chunks are one, integer ids kept as
// text get their values back, names sit at base - (pool id) in [floor, base], and no name
// shares a value with an integer id of the trace.
#include "trace/string_ids.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "trace/test_trace.h"

namespace hta {
namespace {

using test::add_event;
using test::add_flow;
using test::text_id;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// An integer id as the parser keeps one at or below kStringIdBase: as its decimal text.
int64_t kept_as_text(TraceColumns& t, int64_t v) { return text_id(t, std::to_string(v)); }

TEST_CASE("a trace of integer ids only: nothing moves") {
  TraceColumns t;
  for (int64_t pid : {int64_t{0}, int64_t{1}, int64_t{-1}, kStringIdBase + 1, kMax}) {
    add_event(t, "cpu_op", "op", pid, pid, 0, 1);
  }
  const StringIdRange r = place_string_ids(t);
  CHECK(r.base == kStringIdBase);
  CHECK(r.floor == kStringIdBase + 1);  // empty
  CHECK(t.events.pid == Column<int64_t>{0, 1, -1, kStringIdBase + 1, kMax});
  CHECK(t.events.tid == t.events.pid);
}

TEST_CASE("names stay at base - (pool id) when no integer id is there") {
  TraceColumns t;
  const int32_t op = t.strings.intern("aten::mm");  // a name, not an id: takes no place
  const int64_t spans = text_id(t, "Spans");
  const int64_t stream = text_id(t, "stream 7");
  add_event(t, "cpu_op", "aten::mm", spans, stream, 0, 1);
  add_event(t, "cpu_op", "aten::mm", 12, spans, 0, 1);
  const StringIdRange r = place_string_ids(t);
  CHECK(op == 0);
  CHECK(r.base == kStringIdBase);
  CHECK(r.floor == kStringIdBase - 2);
  CHECK(t.events.pid == Column<int64_t>{kStringIdBase - 1, 12});
  CHECK(t.events.tid == Column<int64_t>{kStringIdBase - 2, kStringIdBase - 1});
}

TEST_CASE("integer ids kept as text get their values back, over the whole range") {
  TraceColumns t;
  const std::vector<int64_t> ids = {kStringIdBase, kStringIdBase - 1, -5000000000, kMin, kMin + 1};
  for (int64_t v : ids) add_event(t, "cpu_op", "op", kept_as_text(t, v), 3, 0, 1);
  add_flow(t, 's', "ac2g", kept_as_text(t, kMin), 1, 2, 0);
  const StringIdRange r = place_string_ids(t);
  CHECK(r.floor == r.base + 1);  // no names
  CHECK(std::vector<int64_t>(t.events.pid.begin(), t.events.pid.end()) == ids);
  CHECK(t.flows.id[0] == kMin);
}

TEST_CASE("names move below an integer id that sits where they would") {
  TraceColumns t;
  const int64_t a = text_id(t, "A");  // pool id 0: kStringIdBase
  const int64_t b = text_id(t, "B");  // pool id 1: kStringIdBase - 1, an integer id's value
  add_event(t, "cpu_op", "op", a, b, 0, 1);
  add_event(t, "cpu_op", "op", kept_as_text(t, kStringIdBase - 1), 1, 0, 1);
  const StringIdRange r = place_string_ids(t);
  CHECK(r.base == kStringIdBase - 2);
  CHECK(r.floor == kStringIdBase - 3);
  CHECK(t.events.pid[0] == r.base);
  CHECK(t.events.tid[0] == r.base - 1);
  CHECK(t.events.pid[1] == kStringIdBase - 1);
}

TEST_CASE("names fit between integer ids packed below the base") {
  TraceColumns t;
  std::vector<int64_t> names;
  for (const char* n : {"x", "y", "z"}) names.push_back(text_id(t, n));
  for (int64_t k = 0; k < 10; ++k) {  // kStringIdBase down to kStringIdBase - 9
    add_event(t, "cpu_op", "op", kept_as_text(t, kStringIdBase - k), names[k % 3], 0, 1);
  }
  const StringIdRange r = place_string_ids(t);
  CHECK(r.base == kStringIdBase - 10);
  CHECK(r.floor == kStringIdBase - 12);
  for (size_t k = 0; k < 10; ++k) {
    CHECK(t.events.pid[k] == kStringIdBase - static_cast<int64_t>(k));
    CHECK(t.events.tid[k] == r.base - static_cast<int64_t>(k % 3));
  }
}

TEST_CASE("texts that are not the parser's spelling of an integer id stay names") {
  TraceColumns t;
  // Leading zeros, a sign, spaces, values above the base or past int64: names all.
  const std::vector<std::string> texts = {"-04294967297",          "+4294967297", "-4294967297 ",
                                          " -4294967297",          "5",           "-1",
                                          "-99999999999999999999", "-",           "",
                                          "-4294967297x"};
  for (const std::string& s : texts) add_event(t, "cpu_op", "op", text_id(t, s), 0, 0, 1);
  const StringIdRange r = place_string_ids(t);
  CHECK(r.base == kStringIdBase);
  for (size_t k = 0; k < texts.size(); ++k) {
    CAPTURE(texts[k]);
    CHECK(t.events.pid[k] == kStringIdBase - t.strings.intern(texts[k]));
    CHECK(t.events.pid[k] >= r.floor);
  }
}

TEST_CASE("every id column of every table is placed alike") {
  TraceColumns t;
  const int64_t b = text_id(t, "B");  // pool id 0, where an integer id sits below
  add_event(t, "cpu_op", "op", kept_as_text(t, kStringIdBase), b, 0, 1);
  add_flow(t, 's', "fwdbwd", b, b, kept_as_text(t, kStringIdBase), 0);
  test::append_missing_row(t.counters);
  t.counters.pid.back() = b;
  t.counters.tid.back() = 7;
  test::append_missing_row(t.instants);
  t.instants.pid.back() = 7;
  t.instants.tid.back() = b;
  test::append_missing_row(t.meta);
  t.meta.pid.back() = b;
  t.meta.tid.back() = kept_as_text(t, kStringIdBase);
  const StringIdRange r = place_string_ids(t);
  CHECK(r.base == kStringIdBase - 1);
  CHECK(t.events.pid[0] == kStringIdBase);
  CHECK(t.events.tid[0] == r.base);
  CHECK(t.flows.id[0] == r.base);
  CHECK(t.flows.pid[0] == r.base);
  CHECK(t.flows.tid[0] == kStringIdBase);
  CHECK(t.counters.pid[0] == r.base);
  CHECK(t.counters.tid[0] == 7);
  CHECK(t.instants.tid[0] == r.base);
  CHECK(t.meta.pid[0] == r.base);
  CHECK(t.meta.tid[0] == kStringIdBase);
}

TEST_CASE("random traces: names apart from each other and from every integer id") {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    TraceColumns t;
    std::map<int64_t, std::string> text_of;  // stored id -> text, for the check
    const auto draw = [&] {
      int64_t stored;
      switch (rng() % 4) {
        case 0: {  // an integer id just at or below the base, kept as text
          const int64_t v = kStringIdBase - static_cast<int64_t>(rng() % 40);
          stored = kept_as_text(t, v);
          break;
        }
        case 1:  // a name
          stored = text_id(t, "name " + std::to_string(rng() % 30));
          break;
        case 2:  // a plain integer id, above the base
          return static_cast<int64_t>(rng() % 100) - 50;
        default:  // an integer id far down the range
          stored = kept_as_text(t, kMin + static_cast<int64_t>(rng() % 3));
      }
      text_of[stored] = std::string(t.strings.at(static_cast<int32_t>(kStringIdBase - stored)));
      return stored;
    };
    const int n = 1 + static_cast<int>(rng() % 60);
    for (int k = 0; k < n; ++k) add_event(t, "cpu_op", "op", draw(), draw(), 0, 1);
    const Column<int64_t> pid = t.events.pid, tid = t.events.tid;
    const StringIdRange r = place_string_ids(t);
    std::set<int64_t> integers;
    std::map<std::string, int64_t> name_value;
    std::map<int64_t, std::string> value_name;
    const auto check = [&](int64_t before, int64_t after) {
      if (!is_string_id(before)) {
        CHECK(after == before);
        integers.insert(after);
        return;
      }
      const std::string& text = text_of.at(before);
      if (text.rfind("name ", 0) != 0) {
        CHECK(after == std::stoll(text));
        integers.insert(after);
        return;
      }
      CHECK(after <= r.base);
      CHECK(after >= r.floor);
      const auto [it, fresh] = name_value.emplace(text, after);
      CHECK(it->second == after);  // one name, one value
      const auto [jt, new_value] = value_name.emplace(after, text);
      CHECK(jt->second == text);  // one value, one name
    };
    for (int k = 0; k < n; ++k) {
      check(pid[k], t.events.pid[k]);
      check(tid[k], t.events.tid[k]);
    }
    for (const auto& [value, name] : value_name) CHECK(integers.count(value) == 0);
    for (int64_t v : integers) CHECK((v > r.base || v < r.floor));
  }
}

}  // namespace
}  // namespace hta
