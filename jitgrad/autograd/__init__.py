"""jitgrad.autograd: backward/grad, grad modes, Variable, Function, the graph nodes, anomaly
detection and ``autograd.functional`` (jacobian / hessian / vjp / jvp / vhp / hvp)."""
from . import forward_ad, functional, graph  # noqa: F401 - torch.autograd.forward_ad / .functional / .graph
from .anomaly_mode import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from .engine import backward, grad
from .engine import is_checkpoint_valid as _is_checkpoint_valid  # noqa: F401
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import gradcheck, gradgradcheck
from .profile import is_fusion_enabled, profile, set_fusion_enabled  # noqa: F401 - fusion
from .variable import Variable

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "is_inference_mode_enabled", "Variable", "Function", "FunctionCtx",
           "gradcheck", "gradgradcheck", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "functional", "forward_ad"]
