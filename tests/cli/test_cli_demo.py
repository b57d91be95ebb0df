"""``make demo`` / ``kernelstream demo``: the fit, the peer, the model file and the plot."""

from click.testing import CliRunner

from kernelstream.cli import main


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
