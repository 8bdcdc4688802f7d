"""backends/cuda_launch.py, the lean kernel launch, checked against numba-cuda's own code without
a GPU: the argument kinds it keys its plans on must determine numba's typing of the arguments,
and its packing of the kernel parameters must be what numba's ``_Kernel._prepare_args`` builds,
for device arrays of every layout (built over a fake device allocation: no driver is needed)
and for the scalars and tuples jitgrad's kernels take. The launch itself is checked on hardware
by the whole tests/cuda suite (tools/gpu_lease.sh)."""
from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
    pytest.skip("checks numba-cuda's real device-array and launch code, not the simulator's",
                allow_module_level=True)
pytest.importorskip("numba_cuda", reason="numba-cuda is not installed (the cuda-test extra)")

from jitgrad.backends import cuda_launch as L  # noqa: E402
from jitgrad.backends.numba_cuda_compat import import_numba_cuda  # noqa: E402

import_numba_cuda()
from numba.cuda.cudadrv.devicearray import DeviceNDArray  # noqa: E402
from numba.cuda.dispatcher import _Kernel  # noqa: E402
from numba.cuda.typing.typeof import Purpose, typeof  # noqa: E402


class _FakeAllocation:
    """Stands in for a numba MemoryPointer: all DeviceNDArray reads of it is the address."""

    def __init__(self, address):
        self.device_pointer = address
        self.device_ctypes_pointer = ctypes.c_size_t(address)


def _device_array(shape, strides, dtype, address=0x7F0000001000):
    dtype = np.dtype(dtype)
    return DeviceNDArray(shape, strides, dtype, gpu_data=_FakeAllocation(address))


#: (shape, byte strides, dtype) of the device arrays checked (an empty one needs a driver even
#: to be made: numba gives it a null allocation of the current context)
ARRAYS = [((), (), np.float32), ((7,), (4,), np.float32),
          ((7,), (8,), np.float32),              # strided 1-d
          ((1,), (0,), np.float64),              # size-1 with stride 0
          ((5,), (0,), np.float64),              # broadcast
          ((3, 4), (32, 8), np.float64),         # C
          ((3, 4), (8, 24), np.float64),         # F
          ((3, 4), (64, 8), np.int64),           # A
          ((1, 4), (8, 8), np.int64),            # C and F
          ((2, 3, 4), (4, 8, 24), np.float32),   # F 3-d
          ((2, 1, 4), (16, 4, 4), np.float16)]


class _Overload:
    """What pack() and numba's _prepare_args need of a compiled kernel (no extensions)."""
    extensions = []
    _prepare_args = _Kernel._prepare_args


def _numba_params(argtypes, args):
    params = []
    for ty, a in zip(argtypes, args):
        _Overload()._prepare_args(ty, a, 0, [], params)
    return params


def _as_values(params):
    return [p.value if isinstance(p, ctypes._SimpleCData) else p for p in params]


SCALARS = [np.int64(5), np.int32(-3), np.uint8(7), np.float32(0.5), np.float64(-2.25),
           np.float16(1.5), np.bool_(True), True, 3, 2.5, 1 + 2j, np.complex64(1 - 1j),
           (np.int64(2), np.int64(3)), (4, 5, 6), ()]


@pytest.mark.parametrize("spec", ARRAYS, ids=str)
def test_array_kind_is_numbas_type_and_packing_is_numbas(spec):
    a = _device_array(*spec)
    kind = L.arg_kind(a)
    ty = typeof(a, Purpose.argument)
    assert kind == ("array", a.dtype, ty.ndim, ty.layout)
    want = _as_values(_numba_params([ty], [a]))
    got = _as_values(L.pack(None, [ty], [a]))
    assert got == want and len(got) == 5 + 2 * a.ndim


@pytest.mark.parametrize("v", SCALARS, ids=repr)
def test_scalar_and_tuple_kinds_determine_numbas_type(v):
    ty = typeof(v, Purpose.argument)
    kind = L.arg_kind(v)
    assert kind is not None
    # every value of the same kind types the same (that is what the plans rely on)
    other = type(v)(*(() if isinstance(v, tuple) else (0,))) if not isinstance(v, tuple) \
        else tuple(type(e)(1) for e in v)
    if L.arg_kind(other) == kind:
        assert typeof(other, Purpose.argument) == ty
    got = L.pack(_Overload()._prepare_args, [ty], [v])
    assert _as_values(got) == _as_values(_numba_params([ty], [v]))


def test_mixed_argument_list_packs_in_order():
    args = [np.int64(9), _device_array(*ARRAYS[6]), np.float32(2.0),
            _device_array(*ARRAYS[1]), (np.int64(1), np.int64(2))]
    tys = [typeof(a, Purpose.argument) for a in args]
    got = L.pack(_Overload()._prepare_args, tys, args)
    assert _as_values(got) == _as_values(_numba_params(tys, args))


@pytest.mark.parametrize("v", [np.zeros(3), 1 << 64, -(1 << 63) - 1, "s", None, [1, 2],
                               (1, "x")], ids=repr)
def test_what_the_lean_path_leaves_to_the_dispatcher(v):
    assert L.arg_kind(v) is None


def test_kinds_of_arrays_differing_only_in_size_or_address_are_equal():
    a = _device_array((7,), (4,), np.float32, address=0x1000)
    b = _device_array((1000,), (4,), np.float32, address=0x9000)
    c = _device_array((7,), (8,), np.float32)
    assert L.arg_kind(a) == L.arg_kind(b) != L.arg_kind(c)


def test_device_copies_take_one_memcpy_only_between_dense_arrays_of_one_dtype_and_size():
    from jitgrad.backends.cuda import _dense_pair
    c = _device_array((3, 4), (32, 8), np.float64)
    flat = _device_array((12,), (8,), np.float64, address=0x2000)
    assert _dense_pair(c, flat) and _dense_pair(flat, c)
    assert not _dense_pair(c, _device_array((3, 4), (8, 24), np.float64))    # F order
    assert not _dense_pair(flat, _device_array((12,), (16,), np.float64))    # strided
    assert not _dense_pair(flat, _device_array((12,), (8,), np.int64))       # dtype
    assert not _dense_pair(flat, _device_array((11,), (8,), np.float64))     # size
    assert not _dense_pair(flat, np.zeros(12))                               # host memory


@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 1, 5)], ids=str)
def test_pool_arrays_built_from_a_template_equal_numbas_constructor(shape):
    import numba.cuda

    from jitgrad.backends.cuda_alloc_drivers import NumbaDriver
    drv = NumbaDriver(numba.cuda)
    dtype = np.dtype(np.float32)
    first = drv._device_array(shape, dtype, _FakeAllocation(0x1000))
    second = drv._device_array(shape, dtype, _FakeAllocation(0x2000))
    assert (shape, dtype) in drv._templates
    want = _device_array(shape, tuple(first.strides), dtype, address=0x2000)
    for arr in (first, second):
        assert type(arr) is DeviceNDArray
        assert (arr.shape, arr.strides, arr.size, arr.alloc_size, arr.ndim, arr.dtype,
                arr.flags) == (want.shape, want.strides, want.size, want.alloc_size, want.ndim,
                               want.dtype, want.flags)
        assert arr._numba_type_ == want._numba_type_
    assert second.device_ctypes_pointer.value == 0x2000 != first.device_ctypes_pointer.value
    assert L.pack(None, [want._numba_type_], [second]) == L.pack(None, [want._numba_type_], [want])


def test_jitgrads_launches_do_not_print_numbas_low_occupancy_warning():
    import warnings

    from numba.cuda.core.errors import NumbaPerformanceWarning

    def small_grid_launch(*args):  # what numba-cuda's dispatcher does for a grid < 128 blocks
        warnings.warn(NumbaPerformanceWarning(
            "Grid size 1 will likely result in GPU under-utilization due to low occupancy."),
            stacklevel=2)

    class Kernel:
        def __getitem__(self, config):
            return small_grid_launch

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        L.dispatch(Kernel(), 1, 32, ())
        assert seen == []
        small_grid_launch()  # a user's own kernel keeps numba's warning
        assert len(seen) == 1 and issubclass(seen[0].category, NumbaPerformanceWarning)
