"""The HTML report: one self-contained file (plotly.js inlined once, or from a CDN) with
the doctor's findings and a section per analysis. Analyses compute; this package draws."""

from .build import write_report

__all__ = ["write_report"]
