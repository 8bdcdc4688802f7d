"""Anomaly detection: ``detect_anomaly`` / ``set_detect_anomaly`` (PyTorch's AnomalyMode).

While enabled, every node records the stack of the forward call that created it
(``node.metadata["traceback_"]``); a backward node that raises reports it as a warning, and with
``check_nan`` a node returning NaN raises ``Function 'XBackward0' returned nan values in its 0th
output.``. The state is process-global, as in PyTorch.
"""
from __future__ import annotations

import functools
import os
import traceback
import warnings

import numpy as np

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]

enabled = False
check_nan = False  # enabled and checking for NaN (what the engine reads once per pass)
_check_nan_flag = True

_WARNING = ("Anomaly Detection has been enabled. This mode will increase the runtime and should "
            "only be enabled for debugging.")


def _set(mode: bool, nan: bool) -> None:
    global enabled, check_nan, _check_nan_flag
    enabled = bool(mode)
    _check_nan_flag = bool(nan)
    check_nan = enabled and _check_nan_flag


def is_anomaly_enabled() -> bool:
    return enabled


def is_anomaly_check_nan_enabled() -> bool:
    return _check_nan_flag


# the installed package's folder: frames under it are jitgrad's own. Decided by location, not
# by a name in the path, since users' code may well live in a folder called "jitgrad" (a clone).
_PACKAGE_DIR = os.path.join(os.path.realpath(os.path.dirname(os.path.dirname(__file__))), "")


@functools.lru_cache(maxsize=4096)
def _is_library_file(filename: str) -> bool:
    return os.path.realpath(filename).startswith(_PACKAGE_DIR)


def forward_metadata() -> dict:
    # drop the frames inside jitgrad: the user's forward call is what PyTorch shows
    stack = [f for f in traceback.extract_stack()[:-1] if not _is_library_file(f.filename)]
    return {"traceback_": traceback.format_list(stack)}


def report(node) -> None:
    """A backward node failed under anomaly mode: warn with its forward traceback."""
    tb = node.metadata.get("traceback_")
    name = node.name()
    if tb is None:
        warnings.warn(f"Error detected in {name}. No forward pass information available. Enable "
                      "detect anomaly during forward pass for more information.", UserWarning,
                      stacklevel=4)
    else:
        warnings.warn(f"Error detected in {name}. Traceback of forward call that caused the "
                      "error:\n" + "".join(tb), UserWarning, stacklevel=4)


def check_outputs(node, grads) -> None:
    for i, g in enumerate(grads):
        if g is None:
            continue
        d = g._data
        bad = np.isnan(d).any() if d.__class__ is np.ndarray else np.isnan(d.to_host()).any()
        if bad:
            err = RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                               "output.")
            report(node)
            raise err


class detect_anomaly:  # noqa: N801 - PyTorch's name
    """Context manager (and decorator) that enables anomaly detection."""

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = enabled
        self.check_nan = check_nan
        self.prev_check_nan = _check_nan_flag
        warnings.warn(_WARNING, UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        _set(True, self.check_nan)

    def __exit__(self, *args) -> None:
        _set(self.prev, self.prev_check_nan)

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self.__class__(self.check_nan):
                return fn(*a, **k)
        return wrapper


class set_detect_anomaly:  # noqa: N801 - PyTorch's name
    """Sets anomaly detection on or off; works as a function call and a context manager."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = enabled
        self.prev_check_nan = _check_nan_flag
        _set(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args) -> None:
        _set(self.prev, self.prev_check_nan)
