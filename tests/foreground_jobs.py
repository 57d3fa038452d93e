"""Child processes started as a shell starts a foreground job: with Ctrl-C's default action.

A process started in the background by a non-interactive shell (``make test &``, a CI runner's wrapper) has SIGINT
ignored, and its children inherit that; a Python started that way never raises KeyboardInterrupt. The tests that
deliver a Ctrl-C to a command restore the default in the child first, so that they test the command, not how the
suite was started.
"""

from __future__ import annotations

import signal


def restore_ctrl_c() -> None:
    """``preexec_fn`` for :mod:`subprocess`: SIGINT back to its default action in the child."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
