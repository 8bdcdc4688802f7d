"""``torch.func`` (functorch's composable transforms) on jitgrad's reverse-mode autograd.

* ``grad``, ``grad_and_value``, ``vjp``, ``jacrev``: as PyTorch (pytrees, ``argnums``,
  ``has_aux``, nesting, PyTorch's errors); see ``_grad`` for how transform levels are emulated.
* ``jvp``, ``jacfwd``, ``hessian``, ``linearize``: jitgrad has no per-op forward rules; they are
  computed in reverse mode (double-vjp trick, ``jacrev``), same values to rounding (``_jac``).
  ``autograd.forward_ad``'s dual tensors rest on the same trick.
* ``vmap``: a per-sample loop, NOT batched (no batching rules): same values, ``batch_size``
  calls of the function (``_vmap``).
* ``functional_call``, ``stack_module_state``: ``_functional_call``.
"""
from ._functional_call import functional_call, stack_module_state
from ._grad import grad, grad_and_value, vjp
from ._jac import hessian, jacfwd, jacrev, jvp, linearize
from ._vmap import vmap

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "stack_module_state", "vjp", "vmap"]
