"""``make demo`` / ``kernelstream demo``: the fit, the peer, the model file and the plot."""

import pytest
from click.testing import CliRunner

from kernelstream.cli import main


@pytest.mark.slow
def test_demo_reports_peer_file_size_and_writes_the_plot(tmp_path):
    plot = tmp_path / "curve.png"
    result = CliRunner().invoke(main, ["demo", "--n", "8192", "--plot", str(plot), "-q"])
    assert result.exit_code == 0, (result.output, result.stderr)
    lines = result.output.splitlines()
    ours = next(line for line in lines if line.startswith("DSGRegressor (defaults)"))
    peer = next(line for line in lines if line.startswith("RBFSampler(1024)+Ridge"))
    assert "test MSE" in ours and "MSE ratio ours/peer" in peer
    assert "reloaded predictions identical: True" in result.output
    assert f"learning curve saved to {plot}" in result.output
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


class _Fitted:
    """What the demo reads of a fit that grew its features twice (4 epochs per stage)."""

    n_iter_ = 4
    feature_growth_ = [{"n_components": 1024, "epochs": 4}, {"n_components": 2048, "epochs": 4},
                       {"n_components": 1024, "epochs": 4}]


def test_the_summary_counts_the_epochs_the_progress_bar_counts(capsys):
    """Issue 30: the bar reached "12 epochs" (every stage) while the summary said 4 (those of
    the model kept): the summary now gives both."""
    from kernelstream import demo

    assert demo.epochs_run(_Fitted()) == 12
    demo._report({"mse": 1e-4, "fit_seconds": 1.0, "n_components": 1024, "sigma": 0.5,
                  "alpha": 1e-4, "epochs": 4, "epochs_run": 12, "peer_mse": 1e-4,
                  "peer_seconds": 1.0, "file_bytes": 7000, "reload_identical": True,
                  "plot": None})
    assert "12 epochs (4 at the size kept)" in capsys.readouterr().out


@pytest.mark.slow
def test_epochs_run_is_the_progress_bars_count(capsys):
    """A fit by epochs (more than 4096 rows) whose features grow: the bar counts every stage."""
    import re

    from kernelstream import DSGRegressor, demo
    from kernelstream.datasets import synthetic_regression

    X, y, _ = synthetic_regression(6000, random_state=0)
    model = DSGRegressor(random_state=0, solver="sgd", max_iter=2, verbose=1).fit(X, y)
    assert len(model.feature_growth_) > 1
    counts = re.findall(r"(\d+)epoch \[", capsys.readouterr().err)  # the count, not a rate
    assert counts and int(counts[-1]) == demo.epochs_run(model) >= model.n_iter_
