"""``use_reentrant=False`` checkpointing (``torch.utils.checkpoint``'s second half): the
saved-tensor hooks that keep placeholders, ``_CheckpointFrame`` with its recomputation, early
stop, determinism check and errors, and the generator ``checkpoint()`` drives. The module globals
that ``set_checkpoint_debug_enabled``/``set_checkpoint_early_stop`` write live here, beside the
generator that reads them; ``checkpoint.py`` re-exports the public names."""
from __future__ import annotations

import contextlib
import enum
import uuid
import weakref
from collections import defaultdict

import jitgrad as torch

from ..autograd import engine as _engine
from ..autograd.node import SavedTensor
from ..autograd.saved_hooks import saved_tensors_hooks
from ._checkpoint_devices import (
    _has_device_tensor,
    _infer_device_type,
    get_device_states,
    set_device_states,
)

_DEFAULT_DETERMINISM_MODE = "default"

_checkpoint_debug_enabled = None


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Override ``debug`` of every checkpoint run inside (None: use each call's own)."""
    global _checkpoint_debug_enabled
    prev = _checkpoint_debug_enabled
    try:
        _checkpoint_debug_enabled = enabled
        yield
    finally:
        _checkpoint_debug_enabled = prev


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def _internal_assert(cond) -> None:
    if not cond:
        raise AssertionError(
            "Something went unexpectedly wrong in activation checkpoint. "
            "Please report this bug by filing an issue to PyTorch.")


# ----------------------------------------------------------------------------- non-reentrant
# PyTorch's NOTE [ Nestable Checkpoint ] applies unchanged: saved tensors are managed by the
# innermost checkpoint; an inner checkpoint's inputs are tensors saved to its parent; recomputed
# tensors are cleared as they are unpacked; recomputation stops once all are recomputed.

_enable_checkpoint_early_stop = None


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Whether non-reentrant checkpoints run inside stop recomputation early."""
    global _enable_checkpoint_early_stop
    prev = _enable_checkpoint_early_stop
    try:
        _enable_checkpoint_early_stop = enable
        yield
    finally:
        _enable_checkpoint_early_stop = prev


class _Handle:
    pass


class _Holder:
    def __init__(self) -> None:
        self.handles = {}


class _CheckpointFrame:
    def __init__(self, recompute_fn, early_stop, unpack_error_cb, metadata_fn) -> None:
        self.recompute_fn = recompute_fn
        self.saved_args = []
        self.weak_holders = []
        # weak keys: a partial backward clears entries along with the Holder
        self.recomputed = defaultdict(weakref.WeakKeyDictionary)
        self.recomp_counter = defaultdict(int)
        self.is_recomputed = defaultdict(bool)
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.unpack_error_cb = unpack_error_cb
        self.x_metadatas = []
        self.forward_completed = False
        self.ignore_saved_mismatch = False

    def save_inputs(self, *args):
        # saved tensors: an enclosing checkpoint's pack hook applies to them (nesting)
        self.saved_args = [SavedTensor(arg) if isinstance(arg, torch.Tensor) else arg
                           for arg in args]

    def get_inputs(self):
        return [arg.tensor(None) if isinstance(arg, SavedTensor) else arg
                for arg in self.saved_args]

    def check_recomputed_tensors_match(self, gid) -> None:
        if self.ignore_saved_mismatch:
            return
        if not len(self.weak_holders) == self.recomp_counter[gid]:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved "
                "during the original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.weak_holders)}\n"
                f"Number of tensors saved during recomputation: {self.recomp_counter[gid]}.\n"
                f"{_debug_tip_msg}"
            )
        nb_meta_different = []
        for idx, weak_holder in enumerate(self.weak_holders):
            holder = weak_holder()
            if holder is None:
                continue
            _internal_assert(gid in holder.handles)
            _internal_assert(holder.handles[gid] is not None)
            _internal_assert(holder.handles[gid] in self.recomputed[gid])
            x_meta = self.x_metadatas[idx]
            recomputed_x = self.recomputed[gid][holder.handles[gid]]
            if x_meta != self.metadata_fn(recomputed_x):
                nb_meta_different.append((idx, x_meta, self.metadata_fn(recomputed_x)))
        if nb_meta_different:
            mismatched_tensors = ""
            for idx, x_meta, recomputed_meta in nb_meta_different:
                mismatched_tensors += (
                    f"tensor at position {idx}:\n"
                    f"saved metadata: {x_meta}\n"
                    f"recomputed metadata: {recomputed_meta}\n"
                )
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors "
                "have different metadata than during the forward pass.\n"
                f"{mismatched_tensors}.\n"
                f"{_debug_tip_msg}"
            )


_debug_tip_msg = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint‑debug mode globally.

If this error occurs under torch.compile with automatic_dynamic_shapes enabled,
it may be because the recomputation selected a different compiled graph than the
forward pass (e.g., a dynamic graph instead of the original static graph).
To fix this, either:
  - Use torch._dynamo.mark_dynamic() to explicitly mark varying dimensions as
    dynamic upfront, avoiding the static-to-dynamic transition.
  - Call torch._C._dynamo.eval_frame._set_lru_cache(False) to disable LRU cache
    reordering, which can change which graph is checked first between forward
    and recompute.
See https://github.com/pytorch/pytorch/issues/166926 for more details and
workaround examples.
"""


class CheckpointError(RuntimeError):
    pass


def _get_debug_context_and_cb():
    """PyTorch logs every operator of the forward and the recomputation (LoggingTensorMode) and
    dumps them with the error; jitgrad has no such mode: the error says so instead."""
    def unpack_error_cb(e):
        raise CheckpointError(
            f"{e}\n(debug=True: jitgrad records no operator logs of the original forward and "
            "the recomputation)") from e

    return noop_context_fn, unpack_error_cb


def _default_meta_extractor(x):
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_allowed_determinism_checks_to_fns = {
    _DEFAULT_DETERMINISM_MODE: _default_meta_extractor,
    "none": lambda _: None,
}


class _StopRecomputationError(Exception):
    pass


class _recomputation_hook(saved_tensors_hooks):
    def __init__(self, target_frame_ref, gid) -> None:
        def pack_hook(x):
            x = x.detach() if x.requires_grad else x
            target_frame = target_frame_ref()
            if target_frame is None:
                raise AssertionError("Internal error: target_frame reference is None")
            recomp_idx = target_frame.recomp_counter[gid]
            target_frame.recomp_counter[gid] += 1

            if recomp_idx >= len(target_frame.weak_holders):
                if target_frame.early_stop:
                    raise AssertionError("Unexpected state: target_frame.early_stop is set")
                if not target_frame.forward_completed:
                    # early stop off and a grad() inside the checkpointed function
                    target_frame.ignore_saved_mismatch = True
                    return x
                raise CheckpointError(
                    "torch.utils.checkpoint: trying to save more tensors during "
                    "recomputation than during the original forward pass.\n"
                    f"{_debug_tip_msg}"
                )

            holder = target_frame.weak_holders[recomp_idx]()
            # cleared if someone ran backward within the forward: nothing to keep
            if holder is not None:
                _internal_assert(holder.handles.get(gid, None) is None)
                holder.handles[gid] = _Handle()
                target_frame.recomputed[gid][holder.handles[gid]] = x

            if target_frame.early_stop and target_frame.recomp_counter[gid] == len(
                    target_frame.weak_holders):
                raise _StopRecomputationError
            return x

        def unpack_hook(x):
            return x

        super().__init__(pack_hook, unpack_hook)


class _checkpoint_hook(saved_tensors_hooks):
    def __init__(self, frame) -> None:
        def pack_hook(x):
            holder = _Holder()
            frame.weak_holders.append(weakref.ref(holder))
            # metadata to detect non-determinism
            if frame.metadata_fn is not None:
                with torch.no_grad():
                    frame.x_metadatas.append(frame.metadata_fn(x))
            return holder

        def unpack_hook(holder):
            gid = GraphExecGroup._get_current_group()
            if gid is None:
                gid = _engine.current_graph_task_id()
                if gid == -1:
                    # a temporary id when unpacking outside of a backward call
                    gid = int(uuid.uuid4())

            if not frame.is_recomputed[gid]:
                args = frame.get_inputs()
                try:
                    with _recomputation_hook(weakref.ref(frame), gid), torch.enable_grad():
                        frame.recompute_fn(*args)
                except _StopRecomputationError:
                    pass
                frame.is_recomputed[gid] = True
                frame.check_recomputed_tensors_match(gid)

            _internal_assert(gid in holder.handles)

            if holder.handles[gid] is None:
                extra = ""
                if GraphExecGroup._get_current_group() is not None:
                    extra = (
                        "Performing two backward calls that overlap (i.e. require the same "
                        "saved activation in order to compute gradients) is not allowed while "
                        "under the torch.utils.checkpoint.GraphExecGroup context. "
                    )
                raise CheckpointError(
                    "torch.utils.checkpoint: Unpack is being triggered for a tensor that was "
                    f"already unpacked once. {extra}If you are calling ctx.saved_tensors in "
                    "backward, make sure to do so only once. Otherwise please open an issue "
                    "with details on your use case."
                )
            _internal_assert(holder.handles[gid] in frame.recomputed[gid])
            ret = frame.recomputed[gid][holder.handles[gid]]
            holder.handles[gid] = None
            return ret

        if frame.unpack_error_cb is not None:
            def unpack_hook_with_error_cb(holder):
                try:
                    return unpack_hook(holder)
                except CheckpointError as e:
                    frame.unpack_error_cb(e)
            super().__init__(pack_hook, unpack_hook_with_error_cb)
        else:
            super().__init__(pack_hook, unpack_hook)


class CheckpointPolicy(enum.Enum):
    """Selective checkpoint policies (PyTorch's enum; see create_selective_checkpoint_contexts)."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    raise NotImplementedError(
        "jitgrad: selective activation checkpointing is not supported (PyTorch implements it "
        "with TorchDispatchMode, which jitgrad does not have); use checkpoint() without "
        "context_fn")


def _checkpoint_without_reentrant_generator(fn, preserve_rng_state=True,
                                            context_fn=noop_context_fn,
                                            determinism_check=_DEFAULT_DETERMINISM_MODE,
                                            debug=False, early_stop=True, *args, **kwargs):
    """Checkpointing without reentrant autograd (a generator: pre-forward, post-forward)."""
    unpack_error_cb = None

    if _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
        context_fn, unpack_error_cb = _get_debug_context_and_cb()

    if determinism_check in _allowed_determinism_checks_to_fns:
        metadata_fn = _allowed_determinism_checks_to_fns[determinism_check]
    else:
        raise ValueError(
            "determinism_check should be one of "
            f"{list(_allowed_determinism_checks_to_fns.keys())}, but got {determinism_check}")

    device_type = _infer_device_type(*args)
    forward_context, recompute_context = context_fn()

    if preserve_rng_state:
        fwd_cpu_state = torch.get_rng_state()
        had_device_in_fwd = False
        if _has_device_tensor(args):
            had_device_in_fwd = True
            fwd_devices, fwd_device_states = get_device_states(*args)

    def recompute_fn(*inputs) -> None:
        rng_devices = []
        if preserve_rng_state and had_device_in_fwd:
            rng_devices = fwd_devices
        with torch.random.fork_rng(devices=rng_devices, enabled=preserve_rng_state,
                                   device_type=device_type):
            if preserve_rng_state:
                torch.set_rng_state(fwd_cpu_state)
                if had_device_in_fwd:
                    set_device_states(fwd_devices, fwd_device_states, device_type=device_type)
            with recompute_context:
                fn(*inputs, **kwargs)

    new_frame = _CheckpointFrame(
        recompute_fn,
        _enable_checkpoint_early_stop if _enable_checkpoint_early_stop is not None
        else early_stop,
        unpack_error_cb,
        metadata_fn,
    )

    if not torch.is_grad_enabled():
        yield
        return

    new_frame.save_inputs(*args)

    forward_context_suppressed_exc = False
    with _checkpoint_hook(new_frame), forward_context:
        try:
            yield
        except BaseException:
            forward_context_suppressed_exc = True
            raise
    if forward_context_suppressed_exc:
        raise RuntimeError(
            "torch.utils.checkpoint: the forward context provided by "
            "context_fn suppressed an exception raised during the "
            "checkpointed forward. This is not supported because checkpoint "
            "cannot return a value for a failed forward."
        )
    new_frame.forward_completed = True


_graph_exec_group = [None]


class GraphExecGroup:
    """Checkpointed regions met by backward calls under one instance recompute at most once."""

    def __enter__(self):
        if _graph_exec_group[0] is not None:
            raise RuntimeError("GraphExecGroup contexts cannot be nested. "
                               f"Already inside group {_graph_exec_group[0]}")
        _graph_exec_group[0] = self
        return self

    def __exit__(self, *args) -> None:
        _graph_exec_group[0] = None

    @classmethod
    def _get_current_group(cls):
        return _graph_exec_group[0]
