"""The cann backend (Huawei Ascend NPUs): pure-Python variants, published as ``torch-cann``.

Compiled variants would be named ``cann<major><minor>``. The loader's ``backend=`` also takes ``npu`` (Torch's
device name for it). ``kernels`` 0.17 named the noarch variant ``torch-npu``; 0.19 and this tool name it after
the backend, like every other one.
"""

from kernel_builder.backends.registry import Backend

BACKEND = Backend(name="cann", compute_prefix="cann", aliases=("npu",))
