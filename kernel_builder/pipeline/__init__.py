"""The build pipeline: plan → generate → compile → package → check, sequenced by :class:`builder.Builder`."""
