"""jitgrad.autograd: backward/grad, grad modes, Variable, Function, and the graph nodes."""
from .engine import backward, grad
from .function import Function, FunctionCtx
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import gradcheck, gradgradcheck
from .profile import is_fusion_enabled, profile, set_fusion_enabled  # noqa: F401 - fusion
from .variable import Variable

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "Variable", "Function", "FunctionCtx", "gradcheck", "gradgradcheck"]
