"""On/off environment variables: one rule for ours, huggingface_hub's own rule for its ``HF_*`` variables.

Every switch is read when it is used (not once at import), so a test or a long-running process can change it
between calls (docs/environment.md).

Our variables (:func:`env_flag`): after removing surrounding white space and ignoring case, ``1``, ``true``,
``yes`` and ``on`` turn a switch on, ``0``, ``false``, ``no`` and ``off`` turn it off, and an unset or empty
variable leaves the switch at its default. Any other value also leaves the default, and is reported once (a
typo such as ``KERNEL_BUILDER_VERIFY_DIGEST=disable`` should not pass unnoticed, nor stop a program).

``huggingface_hub``'s variables (:func:`hf_flag`) are read exactly as ``huggingface_hub`` reads them, so both
libraries agree on whether, say, ``HF_HUB_OFFLINE`` is set: on when the value, upper-cased and as it is (no
white space removed), is ``1``, ``ON``, ``YES`` or ``TRUE``; off otherwise, without a report.
"""

from __future__ import annotations

import logging
import os
import threading

__all__ = ["FALSE_VALUES", "HF_TRUE_VALUES", "TRUE_VALUES", "env_flag", "hf_flag"]

logger = logging.getLogger("kernel_builder")

#: Values (lower-cased, stripped) that turn one of our switches on.
TRUE_VALUES = frozenset({"1", "true", "yes", "on"})
#: Values (lower-cased, stripped) that turn one of our switches off.
FALSE_VALUES = frozenset({"0", "false", "no", "off"})
#: ``huggingface_hub``'s ``ENV_VARS_TRUE_VALUES``: compared with the upper-cased value, not stripped.
HF_TRUE_VALUES = frozenset({"1", "ON", "YES", "TRUE"})

_reported: set[tuple[str, str]] = set()
_reported_lock = threading.Lock()


def env_flag(name: str, *, default: bool = False) -> bool:
    """Whether the switch ``name`` is on: its value by the rule above, else ``default``.

    ``default=True`` for a switch that is on unless turned off (``KERNEL_BUILDER_VERIFY_DIGEST``), ``False``
    for one that is off unless turned on (``KERNEL_BUILDER_REQUIRE_SIGNATURE``).
    """
    raw = os.environ.get(name, "")
    value = raw.strip().lower()
    if value in TRUE_VALUES:
        return True
    if value in FALSE_VALUES:
        return False
    if value:
        with _reported_lock:
            first = (name, raw) not in _reported
            _reported.add((name, raw))
        if first:
            logger.warning(
                "%s=%r is neither on (1, true, yes, on) nor off (0, false, no, off); using the default (%s)",
                name, raw, "on" if default else "off",
            )  # fmt: skip
    return default


def hf_flag(*names: str) -> bool:
    """Whether a ``huggingface_hub`` switch is on, read as ``huggingface_hub`` reads it (no default but off).

    With several names, the first that is set and not empty decides, as ``huggingface_hub`` reads
    ``HF_HUB_OFFLINE`` and then ``TRANSFORMERS_OFFLINE``.
    """
    for name in names:
        value = os.environ.get(name)
        if value:
            return value.upper() in HF_TRUE_VALUES
    return False
