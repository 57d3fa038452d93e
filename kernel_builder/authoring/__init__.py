"""The kernel author's loop: ``init``, ``load``, ``test`` and ``bench``."""
