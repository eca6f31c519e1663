"""The verdict stage: a job's phases in, findings and one verdict out (pure: no I/O).

``rules`` holds the rules in the order of model.VERDICTS and decides (``crashhang`` the findings
of crashes, hangs and the budget, ``failures`` those of failed tests), ``coverage`` the thread
coverage of the threaded runs, ``tsan`` the ThreadSanitizer findings, ``confirm`` what re-running
a finding's test alone showed, ``commands`` the reproduce commands.
"""

from .confirm import Target
from .confirm import done as confirm_done
from .confirm import targets as confirm_targets
from .reprocommands import probe_command, reproduce
from .rules import Decision, decide

__all__ = ["Decision", "Target", "confirm_done", "confirm_targets", "decide", "probe_command", "reproduce"]
