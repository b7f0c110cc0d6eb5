"""Layer 2, load: trace files in, Trace / TraceSet out (loader), the executors that
load ranks on threads, processes or a Dask cluster, the Arrow cache, the Parquet dataset and
the per-rank summaries."""
