"""The one error type of the experiments: a setting an experiment cannot run.

It is a usage error (one line, exit status 2; :mod:`records.errors`) that carries the
experiment's command name, so the command line needs no list of experiment errors.

Example:
    >>> e = ExperimentError("only 3 frame tokens occur", "detect")
    >>> e.experiment, str(e), e.exit_code
    ('detect', 'only 3 frame tokens occur', 2)
"""

from __future__ import annotations

from ...records import UsageError


class ExperimentError(UsageError):
    """A setting experiment ``experiment`` cannot run (a usage error, exit status 2)."""

    def __init__(self, message: str, experiment: str = "") -> None:
        super().__init__(message)
        self.experiment = experiment
