"""``python -m jitgrad.utils.gpu_check`` (tools/gpu_check.sh): the hardware check's driver. Here
(no GPU needed): the versions report, the clean stop without a GPU, and the pytest summary it
parses from a real (small) run."""
from __future__ import annotations

import json

from jitgrad.utils import gpu_check


def test_versions_report_names_what_matters():
    info = gpu_check.versions()
    for key in ("python", "numpy", "numba", "numba-cuda", "nvidia-smi", "gpu",
                "numpy_has_row_stack"):
        assert key in info
    json.dumps(info)


def test_stops_clearly_without_a_gpu_and_runs_pytest_when_allowed(tmp_path, cuda_state):
    if cuda_state[2]:  # on hardware the whole check is tools/gpu_check.sh's job
        return
    assert gpu_check.main(["--out", str(tmp_path / "a")]) == 2
    assert "no CUDA GPU found" in (tmp_path / "a" / "summary.txt").read_text()
    rc = gpu_check.main(["--out", str(tmp_path / "b"), "--allow-no-gpu", "--skip-example",
                         "--workers", "0", "--tests",
                         "tests/cuda/test_cuda_backend.py::test_render_cuda_is_a_grid_stride_kernel"])
    text = (tmp_path / "b" / "summary.txt").read_text()
    assert rc == 0 and "tests: rc=0" in text and "1 passed" in text, text
