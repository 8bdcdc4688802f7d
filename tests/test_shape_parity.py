"""Shape and view ops (jitgrad/ops/shape_*.py) against PyTorch, case by case.

Every case is a function ``fn(T, *xs)`` run with ``T = jitgrad`` and ``T = torch`` on the same
float64 (or int64) inputs. The tests compare what a PyTorch user can see: values, dtype, shape,
``is_contiguous()``, ``stride()``, the ``grad_fn`` name, whether the result shares storage with
each input (a view or a copy), and, for misuse, the exception type and message. Gradients are
compared with PyTorch's (a random cotangent per output), with float64 central differences, and
to second order: the VJP must itself be recorded, so ``d<grad, w>/d cotangent`` (which runs the
VJP's own backward) must match PyTorch's. Every expected value comes from torch or from finite
differences, never from jitgrad.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")

CASES = []


def case(label, shapes, fn, dtype="float64", grad=True, ints=False, fd=True, gg=True):
    CASES.append(pytest.param(shapes, fn, dtype, grad, ints, fd, gg, id=label))



# ---------------------------------------------------------------- reshape / view
for shp, new in [((2, 3, 4), (6, 4)), ((2, 3, 4), (-1,)), ((2, 3, 4), (4, -1, 2)), ((), (1,)),
                 ((), ()), ((1,), ()), ((3,), (3, 1)), ((0, 3), (3, 0)), ((0, 3), (-1, 3)),
                 ((2, 3), (1, 6, 1))]:
    case(f"reshape{shp}->{new} varargs", [shp], lambda T, x, n=new: x.reshape(*n))
    case(f"reshape{shp}->{new} tuple", [shp], lambda T, x, n=new: x.reshape(n))
    case(f"reshape{shp}->{new} fn", [shp], lambda T, x, n=new: T.reshape(x, n))
    case(f"view{shp}->{new}", [shp], lambda T, x, n=new: x.view(n))
    case(f"view{shp}->{new} varargs", [shp], lambda T, x, n=new: x.view(*n))
case("reshape Size", [(2, 3)], lambda T, x: x.reshape(T.Size([3, 2])))
case("view Size", [(2, 3)], lambda T, x: x.view(T.Size([3, 2])))
case("reshape list", [(2, 3)], lambda T, x: x.reshape([3, 2]))
case("reshape kw shape", [(2, 3)], lambda T, x: x.reshape(shape=(3, 2)))
case("torch.reshape kw", [(2, 3)], lambda T, x: T.reshape(x, shape=(3, 2)))
case("view kw size", [(2, 3)], lambda T, x: x.view(size=(3, 2)))
case("reshape noncontig (copy)", [(3, 4)], lambda T, x: x.t().reshape(12))
case("reshape noncontig view ok", [(3, 4)], lambda T, x: x.t().reshape(4, 3, 1))
case("reshape of expand", [(3,)], lambda T, x: x.expand(2, 3).reshape(6))
case("reshape of slice", [(4, 6)], lambda T, x: x[:, ::2].reshape(4, 3))
case("reshape of slice2", [(4, 6)], lambda T, x: x[::2].reshape(12))
case("view noncontig err", [(3, 4)], lambda T, x: x.t().view(12))
case("view noncontig ok split", [(3, 4)], lambda T, x: x.t().view(2, 2, 3))
case("view of slice merge", [(4, 6)], lambda T, x: x[::2].view(12))
case("reshape bad", [(2, 3)], lambda T, x: x.reshape(4))
case("reshape two -1", [(2, 3)], lambda T, x: x.reshape(-1, -1))
case("reshape -2", [(2, 3)], lambda T, x: x.reshape(-2, 3))
case("reshape -1 with 0", [(0, 3)], lambda T, x: x.reshape(0, -1))
case("reshape float size", [(2, 3)], lambda T, x: x.reshape(2.0, 3))
case("view dtype int64 from f64", [(2, 3)], lambda T, x: x.detach().view(T.int64))
case("view dtype f32 from f64", [(2, 3)], lambda T, x: x.detach().view(T.float32))
case("view_as", [(2, 3), (3, 2)], lambda T, x, y: x.view_as(y))
case("reshape_as", [(2, 3), (6,)], lambda T, x, y: x.t().reshape_as(y))
case("reshape int", [(2, 3)], lambda T, x: x.reshape(6), dtype="int64", grad=False, ints=True)

# ---------------------------------------------------------------- flatten / unflatten
for shp in [(), (5,), (2, 3, 4), (2, 1, 3), (0, 2)]:
    case(f"flatten{shp}", [shp], lambda T, x: x.flatten())
    case(f"T.flatten{shp}", [shp], lambda T, x: T.flatten(x))
case("flatten 1..2", [(2, 3, 4, 5)], lambda T, x: x.flatten(1, 2))
case("flatten kw", [(2, 3, 4, 5)], lambda T, x: x.flatten(start_dim=1, end_dim=-2))
case("T.flatten kw", [(2, 3, 4, 5)], lambda T, x: T.flatten(x, start_dim=-3))
case("flatten s==e", [(2, 3, 4)], lambda T, x: x.flatten(1, 1))
case("flatten s>e", [(2, 3, 4)], lambda T, x: x.flatten(2, 1))
case("flatten oob", [(2, 3, 4)], lambda T, x: x.flatten(0, 3))
case("flatten 0d dims", [()], lambda T, x: x.flatten(0, -1))
case("flatten 0d oob", [()], lambda T, x: x.flatten(1))
case("flatten noncontig", [(3, 4, 2)], lambda T, x: x.transpose(0, 1).flatten(1))
case("flatten noncontig all", [(3, 4)], lambda T, x: x.t().flatten())
case("flatten 1d", [(4,)], lambda T, x: x.flatten())
case("unflatten", [(2, 12)], lambda T, x: x.unflatten(1, (3, 4)))
case("unflatten -1", [(2, 12)], lambda T, x: x.unflatten(-1, (3, -1)))
case("unflatten list", [(2, 12)], lambda T, x: x.unflatten(1, [2, 2, 3]))
case("unflatten Size", [(2, 12)], lambda T, x: x.unflatten(1, T.Size([6, 2])))
case("T.unflatten kw", [(2, 12)], lambda T, x: T.unflatten(x, dim=1, sizes=(4, 3)))
case("unflatten bad", [(2, 12)], lambda T, x: x.unflatten(1, (5, 3)))
case("unflatten empty sizes", [(2, 12)], lambda T, x: x.unflatten(1, ()))
case("unflatten two -1", [(2, 12)], lambda T, x: x.unflatten(1, (-1, -1)))
case("unflatten oob", [(2, 12)], lambda T, x: x.unflatten(2, (3, 4)))
case("unflatten 0d", [()], lambda T, x: x.unflatten(0, (1,)))
case("unflatten noncontig", [(4, 6)], lambda T, x: x.t().unflatten(0, (2, 3)))

# ---------------------------------------------------------------- squeeze / unsqueeze
for shp in [(), (1,), (3,), (1, 3, 1), (2, 1, 4), (1, 1)]:
    case(f"squeeze(){shp}", [shp], lambda T, x: x.squeeze())
    for d in (0, -1):
        case(f"squeeze({d}){shp}", [shp], lambda T, x, d=d: x.squeeze(d))
        case(f"unsqueeze({d}){shp}", [shp], lambda T, x, d=d: x.unsqueeze(d))
case("squeeze tuple", [(1, 3, 1)], lambda T, x: x.squeeze((0, 2)))
case("squeeze tuple non1", [(1, 3, 1)], lambda T, x: x.squeeze((0, 1)))
case("squeeze list", [(1, 3, 1)], lambda T, x: x.squeeze([0, -1]))
case("squeeze kw", [(1, 3, 1)], lambda T, x: x.squeeze(dim=2))
case("T.squeeze kw", [(1, 3, 1)], lambda T, x: T.squeeze(x, dim=0))
case("squeeze dup dims", [(1, 3, 1)], lambda T, x: x.squeeze((0, 0)))
case("squeeze oob", [(1, 3)], lambda T, x: x.squeeze(2))
case("squeeze tuple oob", [(1, 3)], lambda T, x: x.squeeze((0, 5)))
case("squeeze noncontig", [(3, 1, 4)], lambda T, x: x.transpose(0, 2).squeeze(1))
case("squeeze noncontig all", [(3, 1, 4)], lambda T, x: x.permute(2, 1, 0).squeeze())
case("unsqueeze mid", [(2, 3)], lambda T, x: x.unsqueeze(1))
case("unsqueeze -3", [(2, 3)], lambda T, x: x.unsqueeze(-3))
case("unsqueeze end", [(2, 3)], lambda T, x: x.unsqueeze(2))
case("unsqueeze oob", [(2, 3)], lambda T, x: x.unsqueeze(3))
case("unsqueeze kw", [(2, 3)], lambda T, x: x.unsqueeze(dim=1))
case("T.unsqueeze", [(2, 3)], lambda T, x: T.unsqueeze(x, -1))
case("unsqueeze noncontig", [(3, 4)], lambda T, x: x.t().unsqueeze(1))
case("unsqueeze noncontig end", [(3, 4)], lambda T, x: x.t().unsqueeze(2))
case("unsqueeze slice", [(4, 6)], lambda T, x: x[:, ::2].unsqueeze(0))
case("squeeze int", [(1, 3)], lambda T, x: x.squeeze(0), dtype="int64", grad=False, ints=True)

# ---------------------------------------------------------------- expand / broadcast
case("expand", [(3, 1)], lambda T, x: x.expand(3, 4))
case("expand tuple", [(3, 1)], lambda T, x: x.expand((2, 3, 4)))
case("expand Size", [(3, 1)], lambda T, x: x.expand(T.Size([2, 3, 4])))
case("expand -1", [(3, 1)], lambda T, x: x.expand(-1, 4))
case("expand kw", [(3, 1)], lambda T, x: x.expand(size=(3, 4)))
case("expand 0d", [()], lambda T, x: x.expand(2, 3))
case("expand 0d nothing", [()], lambda T, x: x.expand(()))
case("expand to 0", [(3, 1)], lambda T, x: x.expand(3, 0))
case("expand lead 0", [(3, 1)], lambda T, x: x.expand(0, 3, 1))
case("expand bad", [(3, 2)], lambda T, x: x.expand(3, 4))
case("expand fewer", [(3, 2)], lambda T, x: x.expand(2))
case("expand lead -1", [(3,)], lambda T, x: x.expand(-1, 3))
case("expand int", [(3, 1)], lambda T, x: x.expand(3, 4), dtype="int64", grad=False, ints=True)
case("expand noncontig", [(3, 1, 2)], lambda T, x: x.transpose(0, 2).expand(2, 4, 3))
case("expand_as", [(3, 1), (2, 3, 4)], lambda T, x, y: x.expand_as(y))
case("broadcast_to", [(3, 1)], lambda T, x: x.broadcast_to((2, 3, 4)))
case("T.broadcast_to", [(3, 1)], lambda T, x: T.broadcast_to(x, (3, 5)))
case("T.broadcast_to kw", [(3, 1)], lambda T, x: T.broadcast_to(x, size=(3, 5)))
case("broadcast_tensors", [(3, 1), (4,), ()], lambda T, a, b, c: T.broadcast_tensors(a, b, c))
case("broadcast_tensors bad", [(3,), (4,)], lambda T, a, b: T.broadcast_tensors(a, b))
case("broadcast_tensors one", [(3,)], lambda T, a: T.broadcast_tensors(a))

# ---------------------------------------------------------------- permute / transpose / t
case("permute", [(2, 3, 4)], lambda T, x: x.permute(2, 0, 1))
case("permute tuple", [(2, 3, 4)], lambda T, x: x.permute((1, 2, 0)))
case("permute list neg", [(2, 3, 4)], lambda T, x: x.permute([-1, 0, -2]))
case("permute kw", [(2, 3, 4)], lambda T, x: x.permute(dims=(2, 1, 0)))
case("T.permute", [(2, 3, 4)], lambda T, x: T.permute(x, (2, 1, 0)))
case("T.permute kw", [(2, 3, 4)], lambda T, x: T.permute(x, dims=[1, 0, 2]))
case("permute 0d", [()], lambda T, x: x.permute(()))
case("permute 0d empty varargs", [()], lambda T, x: x.permute())
case("permute wrong len", [(2, 3, 4)], lambda T, x: x.permute(1, 0))
case("permute dup", [(2, 3, 4)], lambda T, x: x.permute(0, 0, 1))
case("permute oob", [(2, 3, 4)], lambda T, x: x.permute(0, 1, 3))
case("permute noncontig", [(2, 3, 4)], lambda T, x: x.transpose(0, 1).permute(2, 0, 1))
case("transpose", [(2, 3, 4)], lambda T, x: x.transpose(0, 2))
case("transpose neg", [(2, 3, 4)], lambda T, x: x.transpose(-1, -2))
case("transpose same", [(2, 3, 4)], lambda T, x: x.transpose(1, 1))
case("transpose kw", [(2, 3, 4)], lambda T, x: x.transpose(dim0=0, dim1=1))
case("T.transpose kw", [(2, 3, 4)], lambda T, x: T.transpose(x, dim0=0, dim1=-1))
case("transpose 0d", [()], lambda T, x: x.transpose(0, -1))
case("transpose 1d", [(3,)], lambda T, x: x.transpose(0, 0))
case("transpose oob", [(2, 3)], lambda T, x: x.transpose(0, 2))
case("swapaxes", [(2, 3, 4)], lambda T, x: x.swapaxes(0, 1))
case("T.swapaxes", [(2, 3, 4)], lambda T, x: T.swapaxes(x, 0, 2))
case("swapaxes kw", [(2, 3, 4)], lambda T, x: x.swapaxes(axis0=0, axis1=1))
case("swapdims", [(2, 3, 4)], lambda T, x: x.swapdims(0, 1))
case("T.swapdims", [(2, 3, 4)], lambda T, x: T.swapdims(x, 0, 2))
case("swapdims kw", [(2, 3, 4)], lambda T, x: x.swapdims(dim0=0, dim1=1))
case("t 2d", [(2, 3)], lambda T, x: x.t())
case("t 1d", [(3,)], lambda T, x: x.t())
case("t 0d", [()], lambda T, x: x.t())
case("t 3d", [(2, 3, 4)], lambda T, x: x.t())
case("T.t", [(2, 3)], lambda T, x: T.t(x))
case("T prop 3d", [(2, 3, 4)], lambda T, x: x.T)
case("T prop 1d", [(3,)], lambda T, x: x.T)
case("mT", [(2, 3, 4)], lambda T, x: x.mT)
case("mT 1d", [(3,)], lambda T, x: x.mT)
case("H", [(2, 3)], lambda T, x: x.H)
case("mH", [(2, 3, 4)], lambda T, x: x.mH)
case("adjoint", [(2, 3, 4)], lambda T, x: x.adjoint())

# ---------------------------------------------------------------- movedim / moveaxis
case("movedim 0,-1", [(2, 3, 4)], lambda T, x: x.movedim(0, -1))
case("movedim -1,0", [(2, 3, 4)], lambda T, x: x.movedim(-1, 0))
case("movedim tuples", [(2, 3, 4)], lambda T, x: x.movedim((0, 1), (2, 0)))
case("movedim lists", [(2, 3, 4, 5)], lambda T, x: x.movedim([0, 3], [1, 0]))
case("movedim kw", [(2, 3, 4)], lambda T, x: T.movedim(x, source=1, destination=2))
case("movedim same", [(2, 3, 4)], lambda T, x: x.movedim(1, 1))
case("movedim 0d", [()], lambda T, x: x.movedim(0, 0))
case("movedim 0d -1", [()], lambda T, x: x.movedim(-1, 0))
case("movedim len mismatch", [(2, 3, 4)], lambda T, x: x.movedim((0, 1), (2,)))
case("movedim dup src", [(2, 3, 4)], lambda T, x: x.movedim((0, 0), (1, 2)))
case("movedim dup dst", [(2, 3, 4)], lambda T, x: x.movedim((0, 1), (2, 2)))
case("movedim oob", [(2, 3, 4)], lambda T, x: x.movedim(3, 0))
case("movedim empty", [(2, 3, 4)], lambda T, x: x.movedim((), ()))
case("moveaxis", [(2, 3, 4)], lambda T, x: x.moveaxis(0, 2))
case("T.moveaxis", [(2, 3, 4)], lambda T, x: T.moveaxis(x, (0, 2), (1, 0)))

# ---------------------------------------------------------------- contiguous
case("contiguous already", [(2, 3)], lambda T, x: x.contiguous())
case("contiguous t", [(2, 3)], lambda T, x: x.t().contiguous())
case("contiguous expand", [(3, 1)], lambda T, x: x.expand(3, 4).contiguous())
case("contiguous memfmt", [(2, 3)], lambda T, x: x.t().contiguous(memory_format=T.contiguous_format))
case("contiguous 0d", [()], lambda T, x: x.contiguous())

# ---------------------------------------------------------------- cat / stack
case("cat", [(2, 3), (4, 3)], lambda T, a, b: T.cat((a, b)))
case("cat dim1", [(2, 3), (2, 1)], lambda T, a, b: T.cat([a, b], 1))
case("cat dim -1 kw", [(2, 3), (2, 1)], lambda T, a, b: T.cat([a, b], dim=-1))
case("cat kw tensors", [(2, 3), (2, 1)], lambda T, a, b: T.cat(tensors=[a, b], dim=-1))
case("concat", [(2, 3), (4, 3)], lambda T, a, b: T.concat((a, b)))
case("concatenate", [(2, 3), (4, 3)], lambda T, a, b: T.concatenate((a, b)))
case("cat one", [(2, 3)], lambda T, a: T.cat([a]))
case("cat empty list", [(2, 3)], lambda T, a: T.cat([]))
case("cat 0d", [(), ()], lambda T, a, b: T.cat([a, b]))
case("cat legacy empty", [(2, 3), (0,)], lambda T, a, b: T.cat([a, b]))
case("cat legacy empty first", [(0,), (2, 3)], lambda T, a, b: T.cat([a, b], 1))
case("cat size mismatch", [(2, 3), (2, 4)], lambda T, a, b: T.cat([a, b]))
case("cat ndim mismatch", [(2, 3), (3,)], lambda T, a, b: T.cat([a, b]))
case("cat oob", [(2, 3), (2, 3)], lambda T, a, b: T.cat([a, b], 2))
case("cat mixed dtype", [(2, 3), (2, 3)], lambda T, a, b: T.cat([a, b.float()]), fd=False)
case("cat int+float", [(2, 3)], lambda T, a: T.cat([a, T.ones(2, 3, dtype=T.int64)]))
case("cat int", [(2, 3), (2, 3)], lambda T, a, b: T.cat([a, b]), dtype="int64", grad=False,
     ints=True)
case("cat noncontig", [(3, 2), (2, 3)], lambda T, a, b: T.cat([a.t(), b]))
case("cat empty parts", [(2, 0), (2, 3)], lambda T, a, b: T.cat([a, b], 1))
case("cat tensor not list", [(2, 3)], lambda T, a: T.cat(a))
case("stack", [(2, 3), (2, 3)], lambda T, a, b: T.stack((a, b)))
case("stack dim -1", [(2, 3), (2, 3)], lambda T, a, b: T.stack([a, b], -1))
case("stack dim 2", [(2, 3), (2, 3)], lambda T, a, b: T.stack([a, b], dim=2))
case("stack kw", [(2, 3), (2, 3)], lambda T, a, b: T.stack(tensors=[a, b], dim=1))
case("stack 0d", [(), ()], lambda T, a, b: T.stack([a, b]))
case("stack oob", [(2, 3), (2, 3)], lambda T, a, b: T.stack([a, b], 3))
case("stack mismatch", [(2, 3), (3, 2)], lambda T, a, b: T.stack([a, b]))
case("stack empty", [(2, 3)], lambda T, a: T.stack([]))
case("stack mixed dtype", [(2, 3), (2, 3)], lambda T, a, b: T.stack([a, b.float()]), fd=False)
case("hstack", [(2, 3), (2, 1)], lambda T, a, b: T.hstack([a, b]))
case("hstack 1d", [(2,), (3,)], lambda T, a, b: T.hstack([a, b]))
case("hstack 0d", [(), ()], lambda T, a, b: T.hstack([a, b]))
case("vstack", [(2, 3), (1, 3)], lambda T, a, b: T.vstack([a, b]))
case("vstack 1d", [(3,), (3,)], lambda T, a, b: T.vstack([a, b]))
case("vstack 0d", [(), ()], lambda T, a, b: T.vstack([a, b]))
case("vstack 3d", [(2, 3, 4), (1, 3, 4)], lambda T, a, b: T.vstack([a, b]))
case("row_stack", [(3,), (3,)], lambda T, a, b: T.row_stack([a, b]))
case("dstack", [(2, 3), (2, 3)], lambda T, a, b: T.dstack([a, b]))
case("column_stack", [(3,), (3, 2)], lambda T, a, b: T.column_stack([a, b]))
case("atleast_1d", [()], lambda T, x: T.atleast_1d(x))
case("atleast_1d 2d", [(2, 3)], lambda T, x: T.atleast_1d(x))
case("atleast_1d multi", [(), (2,)], lambda T, x, y: T.atleast_1d(x, y))
case("atleast_1d list", [(), (2,)], lambda T, x, y: T.atleast_1d([x, y]))
case("atleast_2d", [(3,)], lambda T, x: T.atleast_2d(x))
case("atleast_2d 0d", [()], lambda T, x: T.atleast_2d(x))
case("atleast_3d", [(3,)], lambda T, x: T.atleast_3d(x))
case("atleast_3d 2d", [(2, 3)], lambda T, x: T.atleast_3d(x))

# ---------------------------------------------------------------- split / chunk / unbind
case("split int", [(5, 2)], lambda T, x: x.split(2))
case("split int dim", [(2, 5)], lambda T, x: x.split(2, 1))
case("split int kw", [(2, 5)], lambda T, x: x.split(split_size=3, dim=-1))
case("T.split kw", [(2, 5)], lambda T, x: T.split(x, split_size_or_sections=3, dim=-1))
case("split sections", [(6, 2)], lambda T, x: x.split([1, 2, 3]))
case("split sections tuple", [(6, 2)], lambda T, x: x.split((4, 2)))
case("split sections zero", [(6, 2)], lambda T, x: x.split([0, 6]))
case("split sections bad", [(6, 2)], lambda T, x: x.split([1, 2]))
case("split_with_sizes", [(6, 2)], lambda T, x: x.split_with_sizes([1, 5]))
case("split bigger", [(3, 2)], lambda T, x: x.split(5))
case("split 0", [(3, 2)], lambda T, x: x.split(0))
case("split 0 of empty", [(0, 2)], lambda T, x: x.split(0))
case("split neg", [(3, 2)], lambda T, x: x.split(-1))
case("split empty dim", [(0, 2)], lambda T, x: x.split(2))
case("split 0d", [()], lambda T, x: x.split(1))
case("split one grad", [(5, 2)], lambda T, x: x.split(2)[1])
case("split unused grads", [(5, 2)], lambda T, x: x.split(2)[0] * 2)
case("chunk", [(5, 2)], lambda T, x: x.chunk(3))
case("chunk 6/4", [(6,)], lambda T, x: x.chunk(4))
case("chunk dim", [(2, 7)], lambda T, x: x.chunk(2, dim=1))
case("chunk kw", [(2, 7)], lambda T, x: T.chunk(x, chunks=3, dim=-1))
case("chunk more", [(2,)], lambda T, x: x.chunk(5))
case("chunk 0", [(2,)], lambda T, x: x.chunk(0))
case("chunk neg", [(2,)], lambda T, x: x.chunk(-1))
case("chunk empty", [(0, 3)], lambda T, x: x.chunk(2))
case("chunk 0d", [()], lambda T, x: x.chunk(1))
case("tensor_split int", [(7,)], lambda T, x: x.tensor_split(3))
case("tensor_split idx", [(7,)], lambda T, x: x.tensor_split([1, 4]))
case("hsplit", [(2, 6)], lambda T, x: x.hsplit(3))
case("vsplit", [(6, 2)], lambda T, x: x.vsplit([2]))
case("unbind", [(3, 2)], lambda T, x: x.unbind())
case("unbind dim", [(3, 2)], lambda T, x: x.unbind(1))
case("unbind kw", [(3, 2)], lambda T, x: T.unbind(x, dim=-1))
case("unbind 0d", [()], lambda T, x: x.unbind())
case("unbind empty", [(0, 2)], lambda T, x: x.unbind())
case("unbind one used", [(3, 2)], lambda T, x: x.unbind(1)[1])
case("unbind int", [(3, 2)], lambda T, x: x.unbind(), dtype="int64", grad=False, ints=True)
case("split int dtype", [(5, 2)], lambda T, x: x.split(2), dtype="int64", grad=False, ints=True)

# ---------------------------------------------------------------- narrow / select
case("narrow", [(4, 5)], lambda T, x: x.narrow(1, 1, 3))
case("narrow neg dim", [(4, 5)], lambda T, x: x.narrow(-1, 0, 2))
case("narrow neg start", [(4, 5)], lambda T, x: x.narrow(0, -2, 2))
case("narrow kw", [(4, 5)], lambda T, x: T.narrow(x, dim=0, start=1, length=2))
case("narrow tensor start", [(4, 5)], lambda T, x: x.narrow(0, T.tensor(1), 2))
case("narrow oob", [(4, 5)], lambda T, x: x.narrow(0, 3, 2))
case("narrow neg len", [(4, 5)], lambda T, x: x.narrow(0, 1, -1))
case("narrow start oob", [(4, 5)], lambda T, x: x.narrow(0, 5, 0))
case("narrow start oob2", [(4, 5)], lambda T, x: x.narrow(0, 6, 0))
case("narrow start -5", [(4, 5)], lambda T, x: x.narrow(0, -5, 1))
case("narrow 0d", [()], lambda T, x: x.narrow(0, 0, 1))
case("select", [(4, 5)], lambda T, x: x.select(1, 2))
case("select neg", [(4, 5)], lambda T, x: x.select(-1, -1))
case("select kw", [(4, 5)], lambda T, x: T.select(x, dim=0, index=3))
case("select oob", [(4, 5)], lambda T, x: x.select(0, 4))
case("select oob neg", [(4, 5)], lambda T, x: x.select(0, -5))
case("select dim oob", [(4, 5)], lambda T, x: x.select(2, 0))
case("select 0d", [()], lambda T, x: x.select(0, 0))
case("select 1d", [(3,)], lambda T, x: x.select(0, 1))

# ---------------------------------------------------------------- flip / roll
case("flip", [(2, 3, 4)], lambda T, x: x.flip(0))
case("flip tuple", [(2, 3, 4)], lambda T, x: x.flip((0, 2)))
case("flip varargs", [(2, 3, 4)], lambda T, x: x.flip(0, 2))
case("flip list", [(2, 3, 4)], lambda T, x: x.flip([-1]))
case("T.flip kw", [(2, 3, 4)], lambda T, x: T.flip(x, dims=(1,)))
case("flip dup", [(2, 3)], lambda T, x: x.flip((0, 0)))
case("flip oob", [(2, 3)], lambda T, x: x.flip(2))
case("flip 0d", [()], lambda T, x: x.flip(0))
case("flip empty dims", [(2, 3)], lambda T, x: x.flip(()))
case("flip int", [(2, 3)], lambda T, x: x.flip(1), dtype="int64", grad=False, ints=True)
case("fliplr", [(2, 3)], lambda T, x: x.fliplr())
case("flipud", [(2, 3)], lambda T, x: x.flipud())
case("roll", [(2, 5)], lambda T, x: x.roll(2, 1))
case("roll neg", [(2, 5)], lambda T, x: x.roll(-7, -1))
case("roll flat", [(2, 5)], lambda T, x: x.roll(3))
case("roll multi", [(2, 5)], lambda T, x: x.roll((1, 2), (0, 1)))
case("roll kw", [(2, 5)], lambda T, x: T.roll(x, shifts=1, dims=0))
case("roll mismatch", [(2, 5)], lambda T, x: x.roll((1, 2), 0))
case("roll 0d", [()], lambda T, x: x.roll(1))
case("roll 0d dim", [()], lambda T, x: x.roll(1, 0))
case("roll empty", [(0, 3)], lambda T, x: x.roll(1, 0))
case("roll empty flat", [(0, 3)], lambda T, x: x.roll(1))
case("roll noncontig", [(3, 4)], lambda T, x: x.t().roll(1, 0))
case("roll noncontig flat", [(3, 4)], lambda T, x: x.t().roll(1))
case("roll list dims", [(2, 5)], lambda T, x: x.roll([1], [1]))
case("roll oob", [(2, 5)], lambda T, x: x.roll(1, 2))

# ---------------------------------------------------------------- repeat / tile
case("repeat", [(2, 3)], lambda T, x: x.repeat(2, 1))
case("repeat more", [(2, 3)], lambda T, x: x.repeat(2, 1, 3))
case("repeat tuple", [(2, 3)], lambda T, x: x.repeat((1, 2)))
case("repeat Size", [(2, 3)], lambda T, x: x.repeat(T.Size([1, 2])))
case("repeat kw", [(2, 3)], lambda T, x: x.repeat(repeats=(1, 2)))
case("repeat 0", [(2, 3)], lambda T, x: x.repeat(0, 1), gg=False)
case("repeat fewer", [(2, 3)], lambda T, x: x.repeat(2))
case("repeat neg", [(2, 3)], lambda T, x: x.repeat(-1, 1))
case("repeat 0d", [()], lambda T, x: x.repeat(3))
case("repeat 0d empty", [()], lambda T, x: x.repeat(()))
case("repeat int", [(2, 3)], lambda T, x: x.repeat(2, 2), dtype="int64", grad=False, ints=True)
case("tile", [(2, 3)], lambda T, x: x.tile((2,)))
case("tile varargs", [(2, 3)], lambda T, x: x.tile(2, 2))
case("tile int", [(2, 3)], lambda T, x: x.tile(2))
case("T.tile", [(2, 3)], lambda T, x: T.tile(x, (2, 1, 1)))
case("T.tile kw", [(2, 3)], lambda T, x: T.tile(x, dims=(2, 1)))
case("tile 0d", [()], lambda T, x: x.tile((2,)))
case("tile empty", [(2, 3)], lambda T, x: x.tile(()))

# ---------------------------------------------------------------- new ops
case("diagonal", [(3, 4)], lambda T, x: x.diagonal())
case("diagonal off1", [(3, 4)], lambda T, x: x.diagonal(1))
case("diagonal off-1", [(3, 4)], lambda T, x: x.diagonal(-1))
case("diagonal off big", [(3, 4)], lambda T, x: x.diagonal(5))
case("diagonal off -big", [(3, 4)], lambda T, x: x.diagonal(-3))
case("diagonal 3d", [(2, 3, 4)], lambda T, x: x.diagonal(0, 0, 2))
case("diagonal 3d neg", [(2, 3, 4)], lambda T, x: x.diagonal(1, -1, 1))
case("diagonal 3d rev", [(2, 3, 4)], lambda T, x: x.diagonal(-1, 2, 0))
case("diagonal kw", [(2, 3, 4)], lambda T, x: T.diagonal(x, offset=1, dim1=1, dim2=2))
case("diagonal same dim", [(3, 3)], lambda T, x: x.diagonal(0, 0, 0))
case("diagonal 1d", [(3,)], lambda T, x: x.diagonal())
case("diagonal oob", [(3, 3)], lambda T, x: x.diagonal(0, 0, 2))
case("diagonal noncontig", [(3, 4, 2)], lambda T, x: x.transpose(0, 2).diagonal(0, 1, 2))
case("diagonal int", [(3, 3)], lambda T, x: x.diagonal(), dtype="int64", grad=False, ints=True)
case("diagonal empty", [(0, 3)], lambda T, x: x.diagonal())
case("unfold", [(7,)], lambda T, x: x.unfold(0, 2, 1))
case("unfold step", [(7,)], lambda T, x: x.unfold(0, 3, 2))
case("unfold 2d", [(3, 8)], lambda T, x: x.unfold(1, 4, 3))
case("unfold 2d dim0", [(5, 3)], lambda T, x: x.unfold(0, 2, 2))
case("unfold neg dim", [(3, 8)], lambda T, x: x.unfold(-1, 4, 4))
case("unfold kw", [(3, 8)], lambda T, x: x.unfold(dimension=1, size=2, step=3))
case("unfold whole", [(3, 4)], lambda T, x: x.unfold(1, 4, 1))
case("unfold size 0", [(3, 4)], lambda T, x: x.unfold(1, 0, 1))
case("unfold too big", [(3, 4)], lambda T, x: x.unfold(1, 5, 1))
case("unfold step 0", [(3, 4)], lambda T, x: x.unfold(1, 2, 0))
case("unfold step neg", [(3, 4)], lambda T, x: x.unfold(1, 2, -1))
case("unfold 0d", [()], lambda T, x: x.unfold(0, 1, 1))
case("unfold 0d size2", [()], lambda T, x: x.unfold(0, 2, 1))
case("unfold noncontig", [(4, 6)], lambda T, x: x.t().unfold(1, 2, 1))
case("unfold int", [(7,)], lambda T, x: x.unfold(0, 2, 1), dtype="int64", grad=False, ints=True)
case("unfold oob", [(3, 4)], lambda T, x: x.unfold(2, 1, 1))
case("ravel", [(3, 4)], lambda T, x: x.t().ravel())
case("T.ravel", [(3, 4)], lambda T, x: T.ravel(x))
case("expand then sum grad", [(3, 1)], lambda T, x: x.expand(2, 3, 4) * 1)
case("view of view chain", [(2, 3, 4)], lambda T, x: x.permute(1, 0, 2)[1:].transpose(0, 1))

# ---------------------------------------------------------------- more forms and misuse
case("tile float", [(2, 3)], lambda T, x: x.tile(2.0))
case("chunk float", [(2, 3)], lambda T, x: x.chunk(2.0))
case("transpose float dim", [(2, 3)], lambda T, x: x.transpose(0.0, 1))
case("unsqueeze bool", [(2, 3)], lambda T, x: x.unsqueeze(True))
case("reshape tensor size", [(2, 3)], lambda T, x: x.reshape(T.tensor(6)))
case("split tensor size", [(4, 3)], lambda T, x: x.split(T.tensor(2)))
case("narrow float tensor start", [(4, 3)], lambda T, x: x.narrow(0, T.tensor(1.0), 1))
case("view dtype i8", [(2, 4)], lambda T, x: x.detach().view(T.int8))
case("view dtype bad stride", [(4, 2)], lambda T, x: x.detach().t().view(T.float32))
case("view dtype 0d", [()], lambda T, x: x.detach().view(T.float32))
case("view dtype kw", [(2, 4)], lambda T, x: x.detach().view(dtype=T.int64))
case("diag sq grad", [(3, 3)], lambda T, x: (x.diagonal() ** 2))
case("unfold sq grad", [(2, 7)], lambda T, x: (x.unfold(1, 3, 2) ** 2))
case("unfold overlap grad", [(2, 7)], lambda T, x: (x.unfold(1, 4, 1) * 3))
case("unfold step>size", [(2, 9)], lambda T, x: x.unfold(1, 2, 4))
case("diagonal of unfold", [(4, 6)], lambda T, x: x.unfold(1, 3, 1).diagonal(0, 1, 2))
case("unfold of diagonal", [(5, 5)], lambda T, x: x.diagonal().unfold(0, 2, 1))
case("diagonal of slice", [(4, 6)], lambda T, x: x[1:, ::2].diagonal())
case("diag write via view", [(3, 3)],
     lambda T, x: (lambda y: (y.diagonal().mul_(2), y)[1])(x * 1))
case("diag write via view grad_fn", [(3, 3)],
     lambda T, x: (lambda y: (y.diagonal().add_(1), y)[1] * 1)(x * 1))
case("unfold write via view", [(2, 6)],
     lambda T, x: (lambda y: (y.unfold(1, 2, 2).mul_(3), y)[1])(x * 1))
case("diag fill via leaf view", [(3, 3)], lambda T, x: x.diagonal().zero_())
case("diag no grad inplace", [(3, 3)],
     lambda T, x: (lambda y: (y.diagonal().fill_(7), y)[1])(x.detach().clone()))
case("repeat sq grad", [(2, 3)], lambda T, x: x.repeat(2, 1, 2) ** 2)
case("roll flat sq grad", [(2, 3)], lambda T, x: x.t().roll(2) ** 2)
case("contiguous sq grad", [(2, 3)], lambda T, x: x.t().contiguous() ** 2)
case("tensor_split neg idx", [(7,)], lambda T, x: x.tensor_split([-2, 10]))
case("tensor_split decreasing", [(7,)], lambda T, x: x.tensor_split([4, 2]))
case("tensor_split 0", [(7,)], lambda T, x: x.tensor_split(0))
case("tensor_split dim", [(2, 5)], lambda T, x: T.tensor_split(x, 2, dim=1))
case("hsplit bad", [(2, 5)], lambda T, x: x.hsplit(2))
case("vsplit 1d", [(4,)], lambda T, x: x.vsplit(2))
case("dsplit", [(2, 2, 4)], lambda T, x: x.dsplit([1, 3]))
case("column_stack 0d", [(), ()], lambda T, a, b: T.column_stack([a, b]))
case("dstack 1d", [(3,), (3,)], lambda T, a, b: T.dstack([a, b]))
case("ravel contig", [(2, 3)], lambda T, x: x.ravel())
case("ravel 0d", [()], lambda T, x: x.ravel())
case("adjoint 2d", [(2, 3)], lambda T, x: T.adjoint(x))
case("T 0d", [()], lambda T, x: x.T)
case("mT 2d", [(2, 3)], lambda T, x: x.mT)
case("H 3d", [(2, 3, 4)], lambda T, x: x.H)
case("unbind 0d -1", [()], lambda T, x: x.unbind(-1))
case("unbind 0d 1", [()], lambda T, x: x.unbind(1))
case("roll 0d -1", [()], lambda T, x: x.roll(1, -1))
case("roll empty shifts", [(3,)], lambda T, x: x.roll((), ()))
case("roll bool dims", [(3,)], lambda T, x: x.roll(1, True))
case("squeeze 0d tuple", [()], lambda T, x: x.squeeze((0,)))
case("squeeze 0d tuple -1", [()], lambda T, x: x.squeeze((-1,)))
case("permute Size", [(2, 3)], lambda T, x: x.permute(T.Size([1, 0])))
case("expand empty", [(3,)], lambda T, x: x.expand())
case("expand 0d empty", [()], lambda T, x: x.expand())
case("repeat empty", [(3,)], lambda T, x: x.repeat())
case("flip empty varargs", [(3,)], lambda T, x: x.flip())
case("split_with_sizes neg", [(6, 2)], lambda T, x: x.split([2, -1, 5]))
case("select float idx", [(4, 3)], lambda T, x: x.select(0, 1.0))
case("narrow start tensor int", [(4, 3)], lambda T, x: T.narrow(x, 0, T.tensor(-2), 2))
case("stack Size mismatch empties", [(0, 2), (0, 3)], lambda T, a, b: T.stack([a, b]))
case("cat tuple dim kw", [(2, 3), (2, 3)], lambda T, a, b: T.cat((a, b), dim=T.tensor(1)))
case("broadcast_tensors list", [(3, 1), (4,)], lambda T, a, b: T.broadcast_tensors(*[a, b]))
case("view -1 0d", [()], lambda T, x: x.view(-1))
case("reshape neg 0d", [()], lambda T, x: x.reshape(-1))
case("flatten 0d grad", [()], lambda T, x: x.flatten() * 2)
case("unflatten -1 dim", [(2, 12)], lambda T, x: x.unflatten(-1, (2, 2, -1)))
case("unflatten neg size", [(2, 12)], lambda T, x: x.unflatten(1, (-2, -6)))



# ============================================================================================ run


def _arrays(shapes, dtype, ints, seed=0):
    rng = np.random.default_rng(seed)
    if ints:
        return [rng.integers(-5, 5, size=s).astype(dtype) for s in shapes]
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _outs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _np(T, t):
    t = t.detach()
    return t.numpy().copy() if T is torch else np.array(t._data)


def _shares(T, a, b):
    if a.numel() == 0:
        return False
    if T is torch:
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    return bool(np.shares_memory(a._data, b._data))


def _call(T, arrs, fn, grad):
    xs = [T.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # x.T's deprecation warning (both libraries)
        try:
            return xs, fn(T, *xs), None
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            return xs, None, e


def _first_line(e):
    return str(e).split("\n")[0]


@pytest.mark.parametrize("shapes, fn, dtype, grad, ints, fd, gg", CASES)
def test_forward(shapes, fn, dtype, grad, ints, fd, gg):
    arrs = _arrays(shapes, dtype, ints)
    txs, tr, te = _call(torch, arrs, fn, grad)
    jxs, jr, je = _call(jitgrad, arrs, fn, grad)
    if te is not None or je is not None:
        assert je is not None, f"torch raises {type(te).__name__}: {te}; jitgrad does not"
        assert te is not None, f"jitgrad raises {type(je).__name__}: {je}; torch does not"
        assert type(je).__name__ == type(te).__name__, (je, te)
        if not isinstance(te, TypeError):  # Python-binding wording differs; the type matters
            assert _first_line(je) == _first_line(te)
        return
    touts, jouts = _outs(tr), _outs(jr)
    assert len(jouts) == len(touts)
    for t, j in zip(touts, jouts):
        assert tuple(j.shape) == tuple(t.shape)
        assert str(j.dtype) == str(t.dtype)
        assert np.array_equal(_np(jitgrad, j), _np(torch, t), equal_nan=True)
        assert j.is_contiguous() == t.is_contiguous()
        if t.numel():
            assert j.stride() == t.stride()
        jname = None if j.grad_fn is None else type(j.grad_fn).__name__
        tname = None if t.grad_fn is None else type(t.grad_fn).__name__
        assert jname == tname
        assert j.requires_grad == t.requires_grad
        assert [_shares(jitgrad, j, x) for x in jxs] == [_shares(torch, t, x) for x in txs]


def _cot(shape, k):
    return np.random.default_rng(1000 + k).standard_normal(tuple(shape))


def _grads(T, arrs, fn):
    """(VJP of each input, d<VJP, w>/d cotangent of each output) with create_graph=True."""
    xs = [T.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = [o for o in _outs(fn(T, *xs)) if o.requires_grad]
    ins = [x for x in xs if x.requires_grad]
    if not outs or not ins:
        return None
    cots = [T.tensor(_cot(o.shape, k), requires_grad=True) for k, o in enumerate(outs)]
    gs = T.autograd.grad(outs, ins, cots, create_graph=True, allow_unused=True)
    total = None
    for k, g in enumerate(gs):
        if g is not None and g.requires_grad:
            s = (g * T.tensor(_cot(g.shape, 100 + k))).sum()
            total = s if total is None else total + s
    second = None
    if total is not None:
        second = [None if v is None else _np(T, v)
                  for v in T.autograd.grad(total, cots, allow_unused=True)]
    return [None if g is None else _np(T, g) for g in gs], second


def _numeric_vjp(arrs, fn):
    """Central differences of sum_k <out_k, cot_k> with respect to each float input."""
    def f(vals):
        outs = [o for o in _outs(fn(jitgrad, *[jitgrad.tensor(v) for v in vals]))
                if o.dtype.is_floating_point]
        return sum(float((_np(jitgrad, o) * _cot(o.shape, k)).sum()) for k, o in enumerate(outs))
    res = []
    for i, a in enumerate(arrs):
        if a.dtype.kind != "f":
            continue
        num = np.zeros_like(a)
        for j in range(a.size):
            vals = [v.copy() for v in arrs]
            vals[i].flat[j] += 1e-6
            fp = f(vals)
            vals[i].flat[j] -= 2e-6
            num.flat[j] = (fp - f(vals)) / 2e-6
        res.append(num)
    return res


def _differentiable(param):
    """float64 cases that PyTorch runs without error (misuse is test_forward's business)."""
    shapes, fn, dtype, grad, ints = param.values[:5]
    return grad and dtype == "float64" and \
        _call(torch, _arrays(shapes, dtype, ints), fn, True)[2] is None


@pytest.mark.parametrize("shapes, fn, dtype, grad, ints, fd, gg",
                         [c for c in CASES if _differentiable(c)])
def test_gradients(shapes, fn, dtype, grad, ints, fd, gg):
    arrs = _arrays(shapes, dtype, ints)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, j = _grads(torch, arrs, fn), _grads(jitgrad, arrs, fn)
    assert (t is None) == (j is None)
    if t is None:
        return
    for gt, gj in zip(t[0], j[0]):
        assert (gt is None) == (gj is None)
        if gt is not None:
            np.testing.assert_allclose(gj, gt, rtol=1e-12, atol=1e-12)
    if gg:
        assert (t[1] is None) == (j[1] is None)
        for gt, gj in zip(t[1] or (), j[1] or ()):
            assert (gt is None) == (gj is None)
            if gt is not None:
                np.testing.assert_allclose(gj, gt, rtol=1e-12, atol=1e-12)
    if fd:
        for num, gj in zip(_numeric_vjp(arrs, fn), j[0]):
            np.testing.assert_allclose(np.zeros_like(num) if gj is None else gj, num,
                                       rtol=1e-6, atol=1e-6)


# ============================================================================ targeted behaviour


def test_movedim_regression():
    x = jitgrad.zeros(2, 3, 4)
    assert x.movedim(0, -1).shape == torch.zeros(2, 3, 4).movedim(0, -1).shape == (3, 4, 2)
    assert x.movedim((0, 1), (2, 0)).shape == (3, 4, 2)
    assert jitgrad.moveaxis(x, 2, 0).shape == (4, 2, 3)


@pytest.mark.parametrize("T", [jitgrad, torch], ids=["jitgrad", "torch"])
def test_views_share_version_counter_and_write_through(T):
    x = T.zeros(3, 4)
    d = x.diagonal(1)
    u = x.unfold(1, 2, 2)
    v0 = d._version
    x.add_(1)
    assert d._version == v0 + 1 and u._version == v0 + 1
    d.fill_(5.0)
    u[..., 0].fill_(-1.0)
    expected = np.ones((3, 4))
    expected[[0, 1, 2], [1, 2, 3]] = 5.0
    expected[:, [0, 2]] = -1.0
    assert np.array_equal(_np(T, x), expected)


@pytest.mark.parametrize("op", ["diagonal", "unfold"])
def test_inplace_through_new_view_in_graph(op):
    """In-place on a diagonal/unfold view of a non-leaf records on the base (CopySlices):
    forward values, the base's grad_fn and the gradients are PyTorch's."""
    a = np.random.default_rng(3).standard_normal((4, 6))
    w = np.random.default_rng(4).standard_normal((4, 6))
    res = {}
    for T in (jitgrad, torch):
        x = T.tensor(a, requires_grad=True)
        y = x * 1
        v = y.diagonal(1) if op == "diagonal" else y.unfold(1, 2, 3)
        v.mul_(v.detach() + 2)
        loss = (y * T.tensor(w)).sum() + (v ** 2).sum()
        (g,) = T.autograd.grad(loss, x)
        res[T] = (_np(T, y), type(y.grad_fn).__name__, _np(T, g))
    (jy, jn, jg), (ty, tn, tg) = res[jitgrad], res[torch]
    np.testing.assert_allclose(jy, ty, rtol=1e-12)
    assert jn == tn == "CopySlices"
    np.testing.assert_allclose(jg, tg, rtol=1e-12)


def test_new_view_ops_gradcheck_and_gradgradcheck():
    from jitgrad.autograd import gradcheck, gradgradcheck
    rng = np.random.default_rng(5)
    x = jitgrad.tensor(rng.standard_normal((3, 5, 4)), requires_grad=True)
    fns = [lambda t: (t.diagonal(1, -1, 0) ** 3).sum(-1),
           lambda t: t.unfold(1, 3, 1).sin().sum(-1),
           lambda t: (t.unfold(2, 2, 2).diagonal(0, 0, 3) ** 2),
           lambda t: t.movedim((0, 2), (2, 1)).exp(),
           lambda t: t.repeat(1, 2, 1).tanh(),
           lambda t: t.roll(3).contiguous() ** 2]
    for f in fns:
        assert gradcheck(f, (x,))
        assert gradgradcheck(f, (x,))
