"""SparseAdam: jitgrad has no sparse tensors, so it keeps PyTorch's constructor (defaults,
argument errors) and raises PyTorch's error for the dense gradients it always gets."""
import pytest

import jitgrad as jt

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("kw", [dict(lr=0.0), dict(lr=-1), dict(eps=0.0),
                                dict(betas=(1.0, 0.9)), dict(betas=(0.9, -0.1))])
def test_bad_arguments_raise_like_torch(kw):
    errs = []
    for lib in (torch, jt):
        with pytest.raises(Exception) as ei:
            lib.optim.SparseAdam([lib.ones(2, requires_grad=True)], **kw)
        errs.append(ei.value)
    assert type(errs[1]) is type(errs[0]) and str(errs[1]) == str(errs[0])


def test_dense_gradient_raises_like_torch_and_grad_less_step_runs():
    out = []
    for lib in (torch, jt):
        p = lib.ones(3, requires_grad=True)
        opt = lib.optim.SparseAdam([p], lr=0.1)
        assert opt.step(lambda: 7.0) == 7.0  # no gradient yet: nothing to update
        p.grad = lib.ones(3)
        with pytest.raises(RuntimeError) as e:
            opt.step()
        out.append((str(e.value), p.tolist(), str(opt.defaults), repr(opt),
                    len(opt.state_dict()["state"])))
    assert out[1] == out[0]
