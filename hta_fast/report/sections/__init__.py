"""The report's sections, one module per part of the page: GPU time and efficiency (gpu),
the critical path, graph replays, inference phases, memory, modules, the timeline's
queue, bandwidth, launch delay, steps and collectives (timeline), per-rank views (ranks),
the distributions shown for many ranks (dist), the summary and the doctor's findings."""
