"""Publishing kernels: ``upload`` to the Hub (docs/cli.md).

:mod:`~kernel_builder.publish.content` decides, from local files only, what an upload sends;
:mod:`~kernel_builder.publish.upload` plans it against the Hub and commits it. Hub access goes through
:mod:`kernel_builder.hub`; these modules return reports and never print. Locking and downloading a project's
kernel dependencies are consumer features, on the loader side (:mod:`kernel_builder.loader.lock`,
:mod:`kernel_builder.loader.download`).
"""
