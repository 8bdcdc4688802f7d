"""``DistributedDataParallel``: one model replica per process, gradients averaged over MPI.

At construction the parameters and buffers are broadcast from rank 0, and the parameters are
split into buckets: walked in reverse registration order (the order backward produces their
gradients), grouped by dtype and device, the first bucket closed at 1 MiB and the others at
``bucket_cap_mb`` (25 MiB) — the assignment PyTorch's reducer settles on. A
post-accumulate-grad hook on every parameter copies its gradient into its bucket's flat buffer;
when a bucket's last gradient arrives its all-reduce starts at once (asynchronously, in bucket
order, which is the same on every rank), so communication overlaps the rest of the backward.
When the last bucket has started, the reduced buckets are waited for and copied back into the
``.grad`` of every parameter: the average over ranks, which is the gradient of the mean loss on
the global batch.
"""
from __future__ import annotations

import contextlib

from ..modules.module import Module

__all__ = ["DistributedDataParallel", "GradBucket"]

_DEFAULT_BUCKET_CAP_MB = 25
_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024

UNFINISHED_REDUCTION = (
    "Expected to have finished reduction in the prior iteration before starting a new one. This "
    "error indicates that your module has parameters that were not used in producing loss. You "
    "can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by making "
    "sure all `forward` function outputs participate in calculating loss.\n"
    "Parameter indices which did not receive grad for rank {rank}: {missing}")


class GradBucket:
    """What a communication hook receives (``torch.distributed.GradBucket``'s methods)."""

    def __init__(self, index, buffer, params, is_last):
        self._index, self._buffer, self._params, self._is_last = index, buffer, params, is_last

    def index(self) -> int:
        return self._index

    def buffer(self):
        """The flat tensor holding this bucket's gradients (reduce it in place or return a new
        one from the hook's future)."""
        return self._buffer

    def parameters(self):
        return list(self._params)

    def gradients(self):
        return [p.grad for p in self._params]

    def is_last(self) -> bool:
        return self._is_last

    def set_buffer(self, tensor):
        self._buffer.copy_(tensor)


class _Bucket:
    def __init__(self, index, params):
        from ...ops.basic import zeros
        self.index = index
        self.params = params
        self.offsets = []
        n = 0
        for p in params:
            self.offsets.append(n)
            n += p.numel()
        p0 = params[0]
        self.buffer = zeros(n, dtype=p0.dtype, device=p0.device)
        # each parameter's slice of the flat buffer, shaped like it (made once: views share
        # the buffer's storage)
        self.views = [self.buffer[a:a + p.numel()].view(p.shape)
                      for a, p in zip(self.offsets, params)]
        self.pending = len(params)
        self.future = None

    def view(self, slot):
        return self.views[slot]


def _assign_buckets(params, bucket_cap_mb):
    """Buckets of parameter indices: reverse order, one dtype/device per bucket, the first
    closed at 1 MiB (only with the default cap, as PyTorch), the rest at the cap."""
    cap = int((_DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
    first_cap = _DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None else cap
    open_buckets, done = {}, []
    for i in reversed(range(len(params))):
        p = params[i]
        key = (p.dtype, str(p.device))
        bucket = open_buckets.setdefault(key, [[], 0, first_cap if not done else cap])
        bucket[0].append(i)
        bucket[1] += p.numel() * p.element_size()
        if bucket[1] >= bucket[2]:
            done.append(bucket[0])
            del open_buckets[key]
    done.extend(b[0] for b in open_buckets.values())
    return done


class DistributedDataParallel(Module):
    """``torch.nn.parallel.DistributedDataParallel`` over ``jitgrad.distributed`` (MPI)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None):
        super().__init__()
        from ... import distributed as dist
        self.process_group = process_group
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._world = dist.get_world_size(process_group)
        self._rank = dist.get_rank(process_group)
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        self._params = params
        self._verify_same_model()
        self._sync_module_states()
        self.bucket_bytes_cap = int((_DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None
                                     else bucket_cap_mb) * 1024 * 1024)
        self._buckets = [_Bucket(k, [params[i] for i in idx])
                         for k, idx in enumerate(_assign_buckets(params, bucket_cap_mb))]
        self._where = {}
        for b in self._buckets:
            for slot, p in enumerate(b.params):
                self._where[id(p)] = (b, slot)
        self._comm_hook = None
        self._comm_state = None
        self._armed = False  # a forward under grad sync prepared the next backward
        self._ready = set()
        self._next_bucket = 0
        self._unused = []
        self._handles = [p.register_post_accumulate_grad_hook(self._grad_ready) for p in params]

    # ------------------------------------------------------------------ construction helpers

    def _verify_same_model(self):
        from ... import distributed as dist
        from ...ops.basic import tensor
        shape = [len(self._params), sum(p.numel() for p in self._params)]
        hi = tensor(shape)
        lo = tensor([-v for v in shape])
        dist.all_reduce(hi, dist.ReduceOp.MAX, self.process_group)
        dist.all_reduce(lo, dist.ReduceOp.MAX, self.process_group)
        if hi.tolist() != shape or [-v for v in lo.tolist()] != shape:
            raise RuntimeError(
                f"DDP expects the same model on every rank: rank {self._rank} has "
                f"{shape[0]} parameters with {shape[1]} elements, others differ "
                f"(max {hi.tolist()}, min {[-v for v in lo.tolist()]})")

    def _sync_module_states(self):
        from ... import distributed as dist
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            dist.broadcast(t.data, 0, self.process_group)

    # ------------------------------------------------------------------ forward

    def forward(self, *inputs, **kwargs):
        from ...autograd import is_grad_enabled
        if self._armed and (self._ready or self._next_bucket):
            missing = [i for i, p in enumerate(self._params) if id(p) not in self._ready]
            raise RuntimeError(UNFINISHED_REDUCTION.format(rank=self._rank, missing=missing))
        if self.broadcast_buffers and self.require_forward_param_sync:
            from ... import distributed as dist
            for b in self.module.buffers():
                dist.broadcast(b.data, 0, self.process_group)
        out = self.module(*inputs, **kwargs)
        self._armed = is_grad_enabled() and self.require_backward_grad_sync
        self._reset()
        if self._armed and self.find_unused_parameters:
            self._unused = self._find_unused(out)
        return out

    def _reset(self):
        self._ready = set()
        self._next_bucket = 0
        for b in self._buckets:
            b.pending = len(b.params)
            b.future = None
        self._used_work = None

    def _find_unused(self, out):
        """Parameters the graph of ``out`` does not reach (PyTorch's traversal)."""
        from ...tensor import Tensor
        roots, seen, reached = [], set(), set()

        def collect(o):
            if isinstance(o, Tensor):
                if o.grad_fn is not None:
                    roots.append(o.grad_fn)
                elif o.requires_grad:
                    reached.add(id(o))
            elif isinstance(o, (list, tuple)):
                for v in o:
                    collect(v)
            elif isinstance(o, dict):
                for v in o.values():
                    collect(v)
        collect(out)
        stack = roots
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            var = getattr(node, "variable", None)
            if var is not None:
                reached.add(id(var))
            for edge in node.next_functions:
                if edge is not None and edge[0] is not None:
                    stack.append(edge[0])
        return [p for p in self._params if id(p) not in reached]

    # ------------------------------------------------------------------ backward

    def _grad_ready(self, param):
        if not self._armed:
            return  # no_sync(), or a backward not prepared by a forward of this wrapper
        if self.find_unused_parameters and self._used_work is None:
            self._start_used_map()
            for p in self._unused:
                self._mark_ready(p, zero=True)
        self._mark_ready(param)

    def _start_used_map(self):
        """All-reduce (MAX) which parameters some rank used: gradients of parameters no rank
        used are left as they are (PyTorch's globally-unused rule)."""
        from ... import distributed as dist
        from ..._dtype import int64
        from ...ops.basic import ones
        used = ones(len(self._params), dtype=int64)
        unused = {id(p) for p in self._unused}
        for i, p in enumerate(self._params):
            if id(p) in unused:
                used[i] = 0
        self._used = used
        self._used_work = dist.all_reduce(used, dist.ReduceOp.MAX, self.process_group,
                                          async_op=True)

    def _mark_ready(self, param, zero=False):
        key = id(param)
        if key in self._ready:
            raise RuntimeError(
                "Expected to mark a variable ready only once. This error is caused by one of the "
                "following reasons: 1) Use of a module parameter outside the `forward` function. "
                "2) Reused parameters in multiple reentrant backward passes.")
        self._ready.add(key)
        bucket, slot = self._where[key]
        from ...autograd import no_grad
        with no_grad():
            view = bucket.view(slot)
            if zero or param.grad is None:
                view.zero_()
            else:
                view.copy_(param.grad)
        bucket.pending -= 1
        # buckets start in index order on every rank (MPI matches collectives by order)
        while self._next_bucket < len(self._buckets) and \
                self._buckets[self._next_bucket].pending == 0:
            self._launch(self._buckets[self._next_bucket])
            self._next_bucket += 1
        if self._next_bucket == len(self._buckets):
            self._finalize()

    def _launch(self, bucket):
        is_last = bucket.index == len(self._buckets) - 1
        grad_bucket = GradBucket(bucket.index, bucket.buffer, bucket.params, is_last)
        if self._comm_hook is not None:
            bucket.future = self._comm_hook(self._comm_state, grad_bucket)
            return
        from ... import distributed as dist
        from ...autograd import no_grad
        with no_grad():
            bucket.buffer.div_(self._world)  # divide first: the sum cannot overflow
        work = dist.all_reduce(bucket.buffer, dist.ReduceOp.SUM, self.process_group,
                               async_op=True)
        buffer = bucket.buffer
        bucket.future = work.get_future().then(lambda fut: buffer)

    def _finalize(self):
        from ...autograd import no_grad
        globally_used = None
        if self._used_work is not None:
            self._used_work.wait()
            globally_used = self._used.tolist()
        index = {id(p): i for i, p in enumerate(self._params)}
        with no_grad():
            for bucket in self._buckets:
                result = bucket.future.wait()
                if isinstance(result, (list, tuple)):
                    result = result[0]
                if result is not bucket.buffer:
                    bucket.buffer.copy_(result)
                for slot, p in enumerate(bucket.params):
                    if globally_used is not None and not globally_used[index[id(p)]]:
                        continue
                    reduced = bucket.view(slot)
                    if p.grad is None:
                        p.grad = reduced.clone()
                    else:
                        p.grad.copy_(reduced)
        self._armed = False

    # ------------------------------------------------------------------ public API

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate local gradients only; the first backward after it
        reduces the accumulated gradients."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state, hook):
        """``hook(state, bucket: GradBucket) -> Future`` whose value is the reduced flat
        buffer (PyTorch's communication hook contract); call before the first backward."""
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be "
                               "called once.")
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        self._comm_hook, self._comm_state = hook, state
