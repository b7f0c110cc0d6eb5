"""What every cause reads about a rank, computed once: its view (steps, window, GPU work,
idle gaps), the split of each gap between causes, one-off stalls, the thresholds, and how
costs, events and numbers are tallied and written."""
