// Reads a chunk's events from simdjson's structural index (the positions of every bracket,
// colon, comma and token start that its first stage finds): each member of an event is a
// key, a colon, a value and a comma at known positions, so the walk loads positions from an
// array instead of scanning the text or going through On-Demand's general machinery.
//
// It stops at the first event it cannot read exactly as the On-Demand reader (event_parser.cc)
// would: a string it would have to unescape, args before ph, anything malformed. The caller
// reads from that event on with the On-Demand reader, whose results and errors are the
// reference the walker is tested against (tests/loading/test_event_walker.py).
#pragma once
#include <cstddef>
#include <cstdint>

#include "parse/member_layout.h"
#include "parse/recent_strings.h"
#include "trace/trace_columns.h"

namespace hta {

// `text[0]` is the splitter's '[' and `text[len - 1]` its ']'; `index` holds the `count`
// structural positions of the text (simdjson's stage 1, which has validated its UTF-8 and
// closed its strings). `file_offset` is the offset of text[1]. Stores every event it reads
// into `out` and returns the position of the first event it did not read: `len` when it
// read them all.
// `layout` and `recent` carry what was learned of the profiler's layout (member_layout.h)
// and of its strings (recent_strings.h) from chunk to chunk.
size_t walk_events(const char* text, size_t len, const uint32_t* index, uint32_t count,
                   uint64_t file_offset, TraceColumns& out, MemberLayout& layout,
                   RecentStrings& recent);

}  // namespace hta
