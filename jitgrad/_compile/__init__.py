"""``jitgrad.compile``: capture and replay (docs/compile.md).

``capture`` records what a function does at jitgrad's public boundaries, ``fused`` turns runs
of elementwise ops into one forward kernel and one backward node, ``compiled`` holds the guards
and the replay. This module imports none of them until the first ``compile`` call, because
``capture`` is imported by the elementwise forward itself.
"""
from __future__ import annotations

__all__ = ["compile"]

#: torch.compile's modes (torch 2.13); the two that use CUDA graphs there use them here.
MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
GRAPH_MODES = ("reduce-overhead", "max-autotune")


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
    only while recording (as with CUDA graphs). ``mode="reduce-overhead"`` (or
    ``"max-autotune"``) replays a step on CUDA tensors as one CUDA graph (docs/compile.md);
    ``dynamic``, ``backend`` and ``options`` are accepted for torch.compile's signature;
    ``disable=True`` returns ``model``.
    """
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable,
                                 max_variants=max_variants)
    if mode is not None and options is not None:  # PyTorch's checks and words
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(MODES)}")
    if disable:
        return model
    graphs = mode in GRAPH_MODES
    if not callable(model):  # PyTorch's check and words
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    from . import capture
    from .compiled import CompiledFunction
    capture.install()
    from ..nn.modules.module import Module
    if isinstance(model, Module):
        from .module import OptimizedModule
        return OptimizedModule(model, CompiledFunction(model.forward, max_variants=max_variants,
                                                       fullgraph=fullgraph, cuda_graphs=graphs))
    return CompiledFunction(model, max_variants=max_variants, fullgraph=fullgraph,
                            cuda_graphs=graphs)
