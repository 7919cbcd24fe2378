# Generated from course_lib/optim.py for the release of 02_backward_ops by `python -m course_tools.build` - do not edit.
"""Optimizers. They update parameters' data in place of the graph (no graph is recorded)."""
from __future__ import annotations

from . import nd
from .nn import Parameter


class Optimizer:
    def __init__(self, params):
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")

    def step(self):
        raise NotImplementedError

    def reset_grad(self):
        """Forget every parameter's gradient (needle's name; ``zero_grad`` is PyTorch's)."""
        for p in self.params:
            p.grad = None

    zero_grad = reset_grad

    @staticmethod
    def _grad(p: Parameter, weight_decay: float):
        g = p.grad.realize_cached_data()
        if g.dtype != p.dtype:
            g = g.astype(p.dtype)
        if weight_decay:
            g = g + p.realize_cached_data() * weight_decay
        return g


class SGD(Optimizer):
    """p -= lr * v,  v = momentum * v + (grad + weight_decay * p)   (PyTorch's convention)."""

    def __init__(self, params, lr: float = 0.01, momentum: float = 0.0, weight_decay: float = 0.0):
        super().__init__(params)
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay
        self.velocity: dict[int, nd.NDArray] = {}

    def step(self):
        for p in self.params:
            if p.grad is None:
                continue
            g = self._grad(p, self.weight_decay)
            if self.momentum:
                v = self.velocity.get(id(p))
                g = g if v is None else v * self.momentum + g
                self.velocity[id(p)] = g
            p.cached_data = p.realize_cached_data() - g * self.lr


class Adam(Optimizer):
    """Adam with bias correction (Kingma & Ba, 2015); weight decay added to the gradient."""

    def __init__(self, params, lr: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8, weight_decay: float = 0.0):
        super().__init__(params)
        self.lr, self.beta1, self.beta2, self.eps, self.weight_decay = lr, beta1, beta2, eps, weight_decay
        self.t = 0
        self.m: dict[int, nd.NDArray] = {}
        self.v: dict[int, nd.NDArray] = {}

    def step(self):
        self.t += 1
        for p in self.params:
            if p.grad is None:
                continue
            g = self._grad(p, self.weight_decay)
            m = self.m.get(id(p))
            v = self.v.get(id(p))
            m = g * (1 - self.beta1) if m is None else m * self.beta1 + g * (1 - self.beta1)
            v = g * g * (1 - self.beta2) if v is None else v * self.beta2 + g * g * (1 - self.beta2)
            self.m[id(p)], self.v[id(p)] = m, v
            m_hat = m / (1 - self.beta1 ** self.t)
            v_hat = v / (1 - self.beta2 ** self.t)
            p.cached_data = p.realize_cached_data() - m_hat / (v_hat.sqrt() + self.eps) * self.lr
