"""``torch.utils.checkpoint``: activation checkpointing, ported from PyTorch 2.13.

Two implementations, as in PyTorch:

* ``use_reentrant=True``: ``CheckpointFunction``, an ``autograd.Function`` that runs the function
  under ``no_grad`` and, in its backward, runs it again with grad (same RNG state) and
  backpropagates through that second graph with a nested ``autograd.backward``.
* ``use_reentrant=False``: the function runs with grad under saved-tensor hooks
  (``autograd.graph.saved_tensors_hooks``) whose pack hook keeps a placeholder instead of each
  saved tensor; the first unpack in a backward pass re-runs the function (stopping early once
  every needed tensor is recomputed) under a second pair of hooks that collects the recomputed
  tensors. Nesting, the determinism check and its errors follow PyTorch's ``_CheckpointFrame``.

Not ported: selective activation checkpointing (``create_selective_checkpoint_contexts`` needs
``TorchDispatchMode``), autocast state (jitgrad has no autocast), the operator logs of
``debug=True`` (jitgrad has no LoggingTensorMode: errors are raised as without it).

The reentrant variant and the two entry points live here; the non-reentrant machinery is in
``_checkpoint_nonreentrant.py`` and the device/RNG-state helpers in ``_checkpoint_devices.py``
(their public names are re-exported, so ``torch.utils.checkpoint.X`` works for all of them).
"""
from __future__ import annotations

import warnings

import jitgrad as torch

from ..autograd import engine as _engine
from ..autograd.function import Function
from ._checkpoint_devices import (
    DefaultDeviceType,
    _has_device_tensor,
    _infer_device_type,
    check_backward_validity,
    detach_variable,
    get_device_states,
    set_device_states,
)
from ._checkpoint_nonreentrant import (
    _DEFAULT_DETERMINISM_MODE,
    CheckpointError,
    CheckpointPolicy,
    GraphExecGroup,
    _checkpoint_without_reentrant_generator,
    create_selective_checkpoint_contexts,
    noop_context_fn,
    set_checkpoint_debug_enabled,
    set_checkpoint_early_stop,
)

__all__ = [
    "checkpoint",
    "checkpoint_sequential",
    "CheckpointError",
    "CheckpointFunction",
    "check_backward_validity",
    "detach_variable",
    "get_device_states",
    "set_device_states",
    "noop_context_fn",
    "set_checkpoint_early_stop",
    "DefaultDeviceType",
    "set_checkpoint_debug_enabled",
    "CheckpointPolicy",
    "create_selective_checkpoint_contexts",
    "GraphExecGroup",
]


class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.device_type = _infer_device_type(*args)
        if preserve_rng_state:
            ctx.fwd_cpu_state = torch.get_rng_state()
            # PyTorch stashes the device states only if the device is initialized; jitgrad
            # stashes the CUDA generator's when an input is on CUDA
            ctx.had_device_in_fwd = False
            if _has_device_tensor(args):
                ctx.had_device_in_fwd = True
                ctx.fwd_devices, ctx.fwd_device_states = get_device_states(*args)

        # non-tensor inputs stay in ctx, tensors are saved (None placeholders until backward)
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if torch.is_tensor(arg):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)

        ctx.save_for_backward(*tensor_inputs)

        with torch.no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        if not _engine.is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible"
                " with .grad() or passing an `inputs` parameter to .backward()."
                " To resolve this error, you can either set use_reentrant=False,"
                " or call .backward() without passing the `inputs` argument."
            )
        inputs = list(ctx.inputs)
        tensor_indices = ctx.tensor_indices
        tensors = ctx.saved_tensors
        for i, idx in enumerate(tensor_indices):
            inputs[idx] = tensors[i]

        # run the function again under the forward's RNG state, restoring the surrounding one
        rng_devices = []
        if ctx.preserve_rng_state and ctx.had_device_in_fwd:
            rng_devices = ctx.fwd_devices
        with torch.random.fork_rng(devices=rng_devices, enabled=ctx.preserve_rng_state,
                                   device_type=ctx.device_type):
            if ctx.preserve_rng_state:
                torch.set_rng_state(ctx.fwd_cpu_state)
                if ctx.had_device_in_fwd:
                    set_device_states(ctx.fwd_devices, ctx.fwd_device_states,
                                      device_type=ctx.device_type)
            detached_inputs = detach_variable(tuple(inputs))
            with torch.enable_grad():
                outputs = ctx.run_function(*detached_inputs)

        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)

        # backward() through the outputs that require grad only
        outputs_with_grad = []
        args_with_grad = []
        for i in range(len(outputs)):
            if torch.is_tensor(outputs[i]) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError(
                "none of output has requires_grad=True,"
                " this checkpoint() is not necessary"
            )
        torch.autograd.backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, torch.Tensor) else None
                      for inp in detached_inputs)
        return (None, None) + grads


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check=_DEFAULT_DETERMINISM_MODE, debug=False, early_stop=True,
               **kwargs):
    r"""Checkpoint a model or part of the model: the tensors ``function`` saves for backward are
    not kept; ``function`` runs again in the backward pass to recompute them. See PyTorch's
    ``torch.utils.checkpoint.checkpoint`` for the two variants (``use_reentrant``)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be "
            "passed explicitly. Starting in PyTorch 2.9, calling checkpoint "
            "without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=2
        )
        use_reentrant = True

    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    gen = _checkpoint_without_reentrant_generator(
        function, preserve, context_fn, determinism_check, debug, early_stop, *args, **kwargs)
    next(gen)  # pre-forward logic
    try:
        ret = function(*args, **kwargs)
    except BaseException as e:
        try:
            gen.throw(e)
        except StopIteration as stop:
            raise RuntimeError(
                "torch.utils.checkpoint: the forward context provided by "
                "context_fn suppressed an exception raised during the "
                "checkpointed forward. This is not supported because "
                "checkpoint cannot return a value for a failed forward."
            ) from stop
        raise
    try:
        next(gen)  # post-forward logic
    except StopIteration:
        return ret
    raise AssertionError("torch.utils.checkpoint: expected context_fn generator to yield "
                         "exactly twice, but it yielded more than twice.")


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    r"""Run ``functions`` (an ``nn.Sequential`` or a list of modules/functions) in ``segments``
    chunks, checkpointing every chunk but the last."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
            "parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2
        )
        use_reentrant = True

    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    if isinstance(functions, torch.nn.Sequential):
        functions = list(functions.children())

    segment_size = len(functions) // segments
    # the last chunk has to be non-volatile
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
