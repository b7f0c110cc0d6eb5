"""What every section of the report is drawn with: the context a section reads (its
analyses' results, kept until no later section reads them), figures, HTML tables, the
binned per-rank heatmap and its downsampling, per-rank distributions, plotly.js."""
