"""The cann backend (Huawei Ascend NPUs): pure-Python variants, published as ``torch-npu``.

Compiled variants would be named ``cann<major><minor>``; the loader accepts ``npu`` as another name for it.
"""

from kernel_builder.backends.registry import Backend

BACKEND = Backend(name="cann", compute_prefix="cann", noarch_token="npu", aliases=("npu",))
