"""``jitgrad.distributions``: PyTorch's ``torch.distributions`` for the families RL and VAE
code uses, ported op for op onto jitgrad's tensors, so parameters get gradients through
``log_prob``/``entropy``/``rsample``/``kl_divergence`` and, after ``manual_seed``, CPU samples
are PyTorch's bit for bit (the same sampler calls in the same order).

Gamma, Chi2, Beta and Dirichlet sample through ``torch._standard_gamma`` /
``torch._sample_dirichlet`` (PyTorch's draws too); their KL pairs are in ``kl_gamma``.

Transforms (``transforms``), ``biject_to``/``transform_to`` (``constraint_registry``) and
``TransformedDistribution`` with the families PyTorch builds on it are ported too; their KL pairs
are in ``kl_transformed``.
"""
from . import constraints, transforms  # noqa: F401 - torch.distributions' submodules
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .cauchy import Cauchy
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Chi2, Gamma
from .generalized_pareto import GeneralizedPareto
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kl_gamma import _kl_gamma_gamma  # noqa: F401 - registers the Gamma/Beta/Dirichlet pairs
from .kl_transformed import _kl_gumbel_gumbel  # noqa: F401 - registers the pairs below
from .kumaraswamy import Kumaraswamy
from .laplace import Laplace
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Pareto
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F403 - PyTorch re-exports every transform here
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull

__all__ = ["Bernoulli", "Beta", "Categorical", "Chi2", "Dirichlet", "Distribution", "Exponential",
           "ExponentialFamily", "Gamma", "Independent", "Laplace", "MultivariateNormal", "Normal",
           "OneHotCategorical", "OneHotCategoricalStraightThrough", "Uniform", "kl_divergence",
           "register_kl"]
__all__ += ["Cauchy", "ContinuousBernoulli", "FisherSnedecor", "GeneralizedPareto", "Gumbel",
            "HalfCauchy", "HalfNormal", "InverseGamma", "Kumaraswamy", "LogNormal",
            "LogisticNormal", "Pareto", "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT",
            "TransformedDistribution", "VonMises", "Weibull", "biject_to",
            "transform_to"] + transforms.__all__

# discrete and multivariate families
from .binomial import Binomial  # noqa: E402
from .geometric import Geometric  # noqa: E402
from .kl_discrete import __all__ as _kl_discrete  # noqa: E402, F401 - registers their KL pairs
from .lkj_cholesky import LKJCholesky  # noqa: E402
from .lowrank_multivariate_normal import LowRankMultivariateNormal  # noqa: E402
from .mixture_same_family import MixtureSameFamily  # noqa: E402
from .multinomial import Multinomial  # noqa: E402
from .negative_binomial import NegativeBinomial  # noqa: E402
from .poisson import Poisson  # noqa: E402
from .wishart import Wishart  # noqa: E402

__all__ += ["Binomial", "Geometric", "LKJCholesky", "LowRankMultivariateNormal",
            "MixtureSameFamily", "Multinomial", "NegativeBinomial", "Poisson", "Wishart"]
