"""Grad mode: no_grad / enable_grad / set_grad_enabled / inference_mode.

Each works as a context manager and as a decorator, like PyTorch's; the state is thread-local.
"""
from __future__ import annotations

import functools
import inspect
import threading

_state = threading.local()


def is_grad_enabled() -> bool:
    return getattr(_state, "enabled", True)


def _set(enabled: bool) -> None:
    _state.enabled = bool(enabled)


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
            raise TypeError("use the grad-mode decorators on functions, not classes")
        mode_cls, args = type(self), self._args()

        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*a, **k):
                gen = fn(*a, **k)
                with mode_cls(*args):
                    value = next(gen)
                while True:
                    try:
                        with mode_cls(*args):
                            sent = yield value
                            value = gen.send(sent)
                    except StopIteration as stop:
                        return stop.value
            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with mode_cls(*args):
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
        self.mode = bool(mode)
        # Like PyTorch, calling set_grad_enabled(False) as a function takes effect immediately.
        self._prev = is_grad_enabled()
        _set(self.mode)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _set(self._prev)
        return False

    def _args(self):
        return (self.mode,)

    def __call__(self, fn):
        _set(self._prev)  # used as a decorator: undo the immediate effect of __init__
        return super().__call__(fn)


class inference_mode(_GradModeContext):  # noqa: N801
    """Like no_grad (jitgrad has no separate inference tensors)."""

    def __init__(self, mode: bool = True):
        self.mode = not mode
        self._flag = mode

    def _args(self):
        return (self._flag,)


def is_inference_mode_enabled() -> bool:
    return not is_grad_enabled()
