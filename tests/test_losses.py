"""Losses: derivatives agree with autograd, are stable, and carry the documented conventions."""

import pytest
import torch

from kernelstream.losses import LOSSES, get_loss

POINTWISE = ["squared", "huber", "epsilon_insensitive", "absolute", "quantile", "hinge",
             "squared_hinge", "logistic"]


@pytest.mark.parametrize("name", POINTWISE)
def test_derivative_matches_autograd(name):
    loss = get_loss(name, delta=0.7, epsilon=0.3, quantile=0.8)
    torch.manual_seed(0)
    u = (3 * torch.randn(500, 1, dtype=torch.float64)).requires_grad_()
    y = torch.sign(torch.randn(500, 1, dtype=torch.float64)) if loss.kind == "margin" else torch.randn(500, 1, dtype=torch.float64)
    loss.value(u, y).sum().backward()
    torch.testing.assert_close(loss.derivative(u.detach(), y), u.grad)


def test_softmax_derivative_matches_autograd():
    loss = get_loss("softmax")
    u = torch.randn(100, 4, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, 4, (100,))
    loss.value(u, y).sum().backward()
    torch.testing.assert_close(loss.derivative(u.detach(), y), u.grad)
    torch.testing.assert_close(loss.value(u.detach(), y),
                               torch.nn.functional.cross_entropy(u.detach(), y, reduction="none"))


def test_vector_and_scalar_derivatives_agree():
    loss = get_loss("logistic")
    u = torch.linspace(-5, 5, 11, dtype=torch.float64).view(-1, 1)
    y = torch.ones_like(u)
    batch = loss.derivative(u, y)
    single = torch.cat([loss.derivative(u[i : i + 1], y[i : i + 1]) for i in range(11)])
    torch.testing.assert_close(batch, single, atol=1e-9, rtol=0)


def test_logistic_is_finite_at_large_margins():
    loss = get_loss("logistic")
    u = torch.tensor([[-50.0], [50.0], [-1000.0], [1000.0]])
    y = torch.ones_like(u)
    assert torch.isfinite(loss.value(u, y)).all() and torch.isfinite(loss.derivative(u, y)).all()
    assert loss.value(u, y)[2] == pytest.approx(1000.0)


def test_conventions():
    u, y = torch.tensor([[3.0]]), torch.tensor([[1.0]])
    assert get_loss("squared").value(u, y).item() == 2.0  # ½ (u − y)²
    assert get_loss("squared_hinge").value(-u, y).item() == 16.0  # no ½
    q = get_loss("quantile", quantile=0.9)
    assert q.value(torch.tensor([[0.0]]), y).item() == pytest.approx(0.9)


def test_unknown_loss():
    with pytest.raises(ValueError, match="Unknown loss 'nope'"):
        get_loss("nope")
    assert set(POINTWISE) <= set(LOSSES)
