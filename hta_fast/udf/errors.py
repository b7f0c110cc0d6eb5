"""Errors of user metrics."""


class MetricCompileError(TypeError):
    """A metric that Numba cannot compile for the columns it asks for: the message names
    the metric, the failing source line, and the column(s) and type(s) involved."""


class MetricRunError(RuntimeError):
    """A compiled metric that raised while running (a division by zero, ...): the message
    names the metric and the error. Calling the metric as a plain function on one group's
    columns (metric(*columns)) shows where."""
