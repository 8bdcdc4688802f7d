"""``jitgrad.compile``: capture and replay (docs/compile.md).

``capture`` records what a function does at jitgrad's public boundaries, ``fused`` turns runs
of elementwise ops into one forward kernel and one backward node, ``compiled`` holds the guards
and the replay. This module imports none of them until the first ``compile`` call, because
``capture`` is imported by the elementwise forward itself.
"""
from __future__ import annotations

__all__ = ["compile"]


def compile(model=None, *, fullgraph=False, dynamic=None, backend="jitgrad", mode=None,
            options=None, disable=False, max_variants=8):
    """Compile ``model`` (a function or an ``nn.Module``) like ``torch.compile``.

    The first call with new guards (argument shapes, dtypes, devices, requires_grad, Python
    scalars, grad mode, module structure) runs eagerly while it is recorded; later calls with the
    same guards replay the recording without per-op Python dispatch: runs of elementwise ops are
    one fused kernel forward and one backward node (``CompiledFunctionBackward``), other ops run
    their eager kernels. What cannot be replayed (host reads such as ``.item()`` or printing a
    tensor, in-place writes, ``.grad`` access, module hooks) makes that variant run eagerly, with
    one warning. ``fullgraph=True`` raises instead. Python that does not go through jitgrad runs
    only while recording (as with CUDA graphs). ``dynamic``, ``backend``, ``mode`` and
    ``options`` are accepted for torch.compile's signature; ``disable=True`` returns ``model``.
    """
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable,
                                 max_variants=max_variants)
    if disable:
        return model
    if not callable(model):  # PyTorch's check and words
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    from . import capture
    from .compiled import CompiledFunction
    capture.install()
    from ..nn.modules.module import Module
    if isinstance(model, Module):
        from .module import OptimizedModule
        return OptimizedModule(model, CompiledFunction(model.forward, max_variants=max_variants,
                                                       fullgraph=fullgraph))
    return CompiledFunction(model, max_variants=max_variants, fullgraph=fullgraph)
