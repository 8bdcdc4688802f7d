"""``jitgrad.distributions``: PyTorch's ``torch.distributions`` for the families RL and VAE
code uses, ported op for op onto jitgrad's tensors, so parameters get gradients through
``log_prob``/``entropy``/``rsample``/``kl_divergence`` and, after ``manual_seed``, CPU samples
are PyTorch's bit for bit (the same sampler calls in the same order).

Gamma, Chi2, Beta and Dirichlet sample through ``torch._standard_gamma`` /
``torch._sample_dirichlet`` (PyTorch's draws too); their KL pairs are in ``kl_gamma``.

Not here (yet): Poisson and the other gamma-based families, ``LowRankMultivariateNormal``,
transforms and ``TransformedDistribution``.
"""
from . import constraints  # noqa: F401 - torch.distributions.constraints
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Chi2, Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .kl_gamma import _kl_gamma_gamma  # noqa: F401 - registers the Gamma/Beta/Dirichlet pairs
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Categorical", "Chi2", "Dirichlet", "Distribution", "Exponential",
           "ExponentialFamily", "Gamma", "Independent", "Laplace", "MultivariateNormal", "Normal",
           "OneHotCategorical", "OneHotCategoricalStraightThrough", "Uniform", "kl_divergence",
           "register_kl"]

# discrete and multivariate families
from .binomial import Binomial  # noqa: E402
from .geometric import Geometric  # noqa: E402
from .lowrank_multivariate_normal import LowRankMultivariateNormal  # noqa: E402
from .mixture_same_family import MixtureSameFamily  # noqa: E402
from .multinomial import Multinomial  # noqa: E402
from .negative_binomial import NegativeBinomial  # noqa: E402
from .poisson import Poisson  # noqa: E402

__all__ += ["Binomial", "Geometric", "LowRankMultivariateNormal", "MixtureSameFamily",
            "Multinomial", "NegativeBinomial", "Poisson"]
