"""Publishing kernels: ``upload`` to the Hub (docs/cli.md), and a project's kernel dependencies locked and
downloaded (``lock``, ``download``, docs/loading.md).

:mod:`~kernel_builder.publish.content` decides, from local files only, what an upload sends;
:mod:`~kernel_builder.publish.upload` plans it against the Hub and commits it;
:mod:`~kernel_builder.loader.lock` and :mod:`~kernel_builder.loader.download` implement the two lock
commands. Hub access goes through :mod:`kernel_builder.hub`; these modules return reports and never print.
"""
