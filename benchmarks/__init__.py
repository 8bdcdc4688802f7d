"""jitgrad's asv benchmark suite (see asv.conf.json at the repository root).

Each benchmark runs jitgrad and, when installed, the same workload in PyTorch and NumPy, so the
report shows the three side by side. The suite measures the checkout it lives in: the repository
root goes first on ``sys.path``.
"""
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.path.isdir(os.path.join(_ROOT, "jitgrad")) and _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
