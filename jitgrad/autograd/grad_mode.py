"""Grad mode: no_grad / enable_grad / set_grad_enabled / inference_mode.

Each works as a context manager and as a decorator, like PyTorch's; the state is thread-local.
"""
from __future__ import annotations

import functools
import inspect
import sys
import threading


class _State(threading.local):
    """Per-thread modes. The defaults are class attributes, so a thread that never set a mode
    reads them by plain attribute lookup (``getattr(local, name, default)`` raised and caught
    an AttributeError inside: ~0.5 us on every op's grad-mode check)."""

    enabled = True
    inference = False


_state = _State()


def is_grad_enabled() -> bool:
    return _state.enabled


def _set(enabled: bool) -> None:
    _state.enabled = bool(enabled)


def _wrap_generator(ctx_factory, fn):
    """PyTorch's _wrap_generator: the mode holds while the generator runs, not while it is
    suspended at a yield."""

    @functools.wraps(fn)
    def generator_context(*args, **kwargs):
        gen = fn(*args, **kwargs)
        try:
            with ctx_factory():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with ctx_factory():
                        gen.close()
                    raise
                except BaseException:
                    with ctx_factory():
                        response = gen.throw(*sys.exc_info())
                else:
                    with ctx_factory():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value

    return generator_context


class _GradModeContext:
    """Base: subclasses set ``self.mode`` (True/False) before ``__enter__``."""

    mode = True

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set(self.mode)
        return None

    def __exit__(self, *exc):
        _set(self._prev)
        return False

    def __call__(self, fn):
        if inspect.isclass(fn):
            import warnings
            warnings.warn("Decorating classes is deprecated and will be disabled in future "
                          "versions. You should only decorate functions or methods.",
                          FutureWarning, stacklevel=2)
            orig = fn

            def fn(*a, **k):
                return orig(*a, **k)
            return self.clone()(fn)
        factory = self.clone
        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(factory, fn)

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with factory():
                return fn(*a, **k)
        return wrapper

    def _args(self):
        return ()

    def clone(self):
        return type(self)(*self._args())


class _NoParamDecorator(_GradModeContext):
    """Usable as ``@no_grad()`` and, like PyTorch 2, as a bare ``@no_grad``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecorator):  # noqa: N801 - PyTorch's name
    mode = False


class enable_grad(_NoParamDecorator):  # noqa: N801
    mode = True


class set_grad_enabled(_GradModeContext):  # noqa: N801
    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError("set_grad_enabled(): argument 'enabled' (position 1) must be bool, "
                            f"not {type(mode).__name__}")
        self.mode = mode
        # Like PyTorch, calling set_grad_enabled(False) as a function takes effect immediately.
        self._prev = is_grad_enabled()
        _set(self.mode)

    def __enter__(self):
        _set(self.mode)
        return None

    def __exit__(self, *exc):
        _set(self._prev)
        return False

    def _args(self):
        return (self.mode,)

    def __call__(self, fn):
        _set(self._prev)  # used as a decorator: undo the immediate effect of __init__
        return super().__call__(fn)

    def clone(self):
        # PyTorch's clone constructs a new set_grad_enabled, which takes effect at once too
        return type(self)(self.mode)

    def __str__(self):
        return f"torch.autograd.grad_mode.set_grad_enabled(mode={self.mode})"

    __repr__ = __str__


class inference_mode(_GradModeContext):  # noqa: N801
    """Grad mode off and ``is_inference_mode_enabled()`` True (``inference_mode(False)``: grad
    on, inference off). jitgrad has no separate inference tensors: tensors made inside behave
    like ones made under no_grad."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True):
        self.mode = not mode
        self._flag = mode

    def __enter__(self):
        self._prev = is_grad_enabled()
        self._prev_inf = is_inference_mode_enabled()
        _set(self.mode)
        _state.inference = self._flag
        return None

    def __exit__(self, *exc):
        _set(self._prev)
        _state.inference = self._prev_inf
        return False

    def _args(self):
        return (self._flag,)


def is_inference_mode_enabled() -> bool:
    return _state.inference
