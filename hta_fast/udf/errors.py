"""Errors of user metrics."""


class MetricCompileError(TypeError):
    """A metric that Numba cannot compile for the columns it asks for: the message names
    the metric, the failing source line, and the column(s) and type(s) involved."""
