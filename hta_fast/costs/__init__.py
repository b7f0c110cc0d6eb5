"""Layer 4, costs: per-event knowledge: dtype sizes, FLOPs and bytes per operator, devices
and their peaks, kernel-time models, collective sizes."""
