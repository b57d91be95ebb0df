"""The kernelstream command line: the Python API's results from files, and one line per failure."""

import csv
import json
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.datasets import dump_svmlight_file

from kernelstream import DSGClassifier, GoGPRegressor, load
from kernelstream.cli import main

from support import ROOT, kill_after_writes, shared_dataset

#: explicit small settings: the test takes seconds, and every number is the same on both sides
SMALL = dict(sigma=4.0, alpha=1e-5, n_components=256, max_iter=3, batch_size=512)
N_TRAIN, N_TEST = 2000, 1000


def run(*args, ok=True):
    result = CliRunner().invoke(main, [str(a) for a in args])
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr)
    return result


def small_options():
    return [item for key, value in SMALL.items() for item in (f"--{key.replace('_', '-')}", value)]


@pytest.fixture(scope="module")
def a9a_files(tmp_path_factory):
    """A subsample of a9a written as LIBSVM text (1-based indices, as LIBSVM's own files)."""
    data = shared_dataset("a9a")
    folder = tmp_path_factory.mktemp("a9a")
    train, test = folder / "a9a.svm", folder / "a9a.t"
    dump_svmlight_file(data["X_train"][:N_TRAIN], data["y_train"][:N_TRAIN], str(train),
                       zero_based=False)
    dump_svmlight_file(data["X_test"][:N_TEST], data["y_test"][:N_TEST], str(test),
                       zero_based=False)
    return data, train, test


@pytest.fixture(scope="module")
def a9a_model(a9a_files):
    data, train, test = a9a_files
    path = train.parent / "a9a.kst"
    run("fit", train, "--task", "classification", "--n-features", 123, "-o", path,
        *small_options(), "--quiet")
    return path


@pytest.fixture(scope="module")
def regression_csv(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (300, 2))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.standard_normal(300)
    path = tmp_path_factory.mktemp("reg") / "train.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="u,v,target", comments="")
    return X, y, path


def test_fit_and_evaluate_on_libsvm_text_reproduce_the_python_api(a9a_files, a9a_model):
    data, train, test = a9a_files
    reference = DSGClassifier(random_state=0, **SMALL).fit(data["X_train"][:N_TRAIN],
                                                          data["y_train"][:N_TRAIN])
    expected = reference.predict(data["X_test"][:N_TEST])
    error = 1 - np.mean(expected == data["y_test"][:N_TEST])
    report = json.loads(run("evaluate", a9a_model, test, "--json").output)
    assert report["error"] == error and report["rows"] == N_TEST
    predictions = run("predict", a9a_model, test).output.split()
    assert predictions[0] == "prediction"
    np.testing.assert_array_equal(np.array(predictions[1:], dtype=int), expected)
    np.testing.assert_array_equal(load(a9a_model).decision_function(data["X_test"][:N_TEST]),
                                  reference.decision_function(data["X_test"][:N_TEST]))


@pytest.mark.slow
def test_python_m_kernelstream_runs_the_installed_command(a9a_files, a9a_model, tmp_path):
    data, train, test = a9a_files
    out = tmp_path / "proba.csv"
    done = subprocess.run([sys.executable, "-m", "kernelstream", "predict", str(a9a_model),
                           str(test), "--proba", "-o", str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["prediction", "proba_-1", "proba_1"]
    proba = load(a9a_model).predict_proba(data["X_test"][:N_TEST])
    np.testing.assert_array_equal([float(r["proba_1"]) for r in rows], proba[:, 1])


def test_info_reports_class_parameters_features_and_training_shape(a9a_model, a9a_files):
    info = json.loads(run("info", a9a_model, "--json").output)
    assert info["class"] == "DSGClassifier"
    assert info["params"]["n_components"] == 256 and info["random_state"] == 0
    assert info["non_default_params"]["sigma"] == 4.0
    assert info["fitted"]["n_features_in_"] == 123 and info["fitted"]["classes_"] == [-1, 1]
    assert info["training"]["rows"] == N_TRAIN and info["training"]["features"] == 123
    assert info["file_bytes"] == a9a_model.stat().st_size and info["library_version"]
    assert info["params"]["verbose"] == 0  # the run's progress bars are not saved with it
    text = run("info", a9a_model).output
    assert "DSGClassifier" in text and f"{N_TRAIN} rows x 123 features" in text


def test_gp_models_give_std_and_interval_coverage(regression_csv, tmp_path):
    X, y, path = regression_csv
    model = tmp_path / "gogp.kst"
    run("fit", path, "--estimator", "gogp", "-o", model, "-q")
    reference = GoGPRegressor(random_state=0).fit(X, y)
    table = np.genfromtxt(run("predict", model, path, "--std").output.splitlines(),
                          delimiter=",", names=True)
    mean, std = reference.predict(X, return_std=True, include_noise=True)
    np.testing.assert_array_equal(table["prediction"], mean)
    np.testing.assert_array_equal(table["std"], std)
    report = json.loads(run("evaluate", model, path, "--json", "--level", 0.9).output)
    assert report["coverage"] == np.mean(np.abs(y - mean) <= 1.6448536269514722 * std)
    assert report["rmse"] == pytest.approx(np.sqrt(np.mean((y - mean) ** 2)), rel=1e-12)


def test_options_come_from_a_config_file_and_the_command_line_wins(regression_csv, tmp_path):
    X, y, path = regression_csv
    (tmp_path / "fit.toml").write_text(
        'task = "regression"\nkernel = "laplace"\nn-components = 128\noutput = "ignored.kst"\n'
        '[params]\nmax_iter = 2\nearly_stopping = false\nalpha = 1e-4\nsigma = 2.0\n')
    (tmp_path / "fit.yaml").write_text("task: regression\nkernel: laplace\n"
                                       "params: {alpha: 0.001}\n")
    model = tmp_path / "model.kst"
    run("fit", path, "--config", tmp_path / "fit.toml", "-o", model, "--kernel", "rbf", "-q")
    params = load(model).get_params()
    assert (params["kernel"], params["n_components"], params["max_iter"]) == ("rbf", 128, 2)
    assert params["early_stopping"] is False and params["alpha"] == 1e-4
    run("fit", path, "--config", tmp_path / "fit.yaml", "-o", model, "-p", "sigma=1.5",
        "-p", "max_iter=2", "-q")
    params = load(model).get_params()
    assert (params["kernel"], params["alpha"], params["sigma"]) == ("laplace", 1e-3, 1.5)


def test_json_and_quiet_outputs(regression_csv, tmp_path):
    X, y, path = regression_csv
    model = tmp_path / "model.kst"
    result = run("fit", path, "--task", "regression", "-o", model, "--json", "--n-components", 64,
                 "--sigma", 1.0, "--alpha", 1e-4, "--max-iter", 2)
    report = json.loads(result.output)
    assert report["class"] == "DSGRegressor" and report["rows"] == 300
    assert report["file_bytes"] == model.stat().st_size and result.stderr == ""
    assert run("evaluate", model, path, "-q").output == ""


def test_progress_bar_shows_the_engines_stages(regression_csv, tmp_path):
    X, y, path = regression_csv
    result = run("fit", path, "--task", "regression", "-o", tmp_path / "m.kst",
                 "--n-components", 64, "--sigma", 1.0, "--alpha", 1e-4, "--max-iter", 2)
    assert "stage" in result.stderr and "solve: " in result.stderr
    assert "DSGRegressor fitted on 300 rows x 2 features" in result.output


@pytest.mark.parametrize("command", ["fit", "predict", "evaluate", "info", "demo"])
def test_help_has_examples(command):
    text = run(command, "--help").output
    assert "Usage: " in text
    if command != "demo":
        assert "Examples:" in text and f"kernelstream {command} " in text


def test_resume_slot_is_passed_only_to_estimators_that_take_it(regression_csv, tmp_path):
    X, y, path = regression_csv
    result = run("fit", path, "--estimator", "gogp", "-o", tmp_path / "m.kst", "--resume",
                 tmp_path / "ckpt", ok=False)
    assert result.exit_code == 2
    assert result.stderr.strip() == ("error: --resume is not supported by this estimator "
                                     "(GoGPRegressor.fit takes no 'resume')")
    result = run("fit", path, "--estimator", "gogp", "-o", tmp_path / "m.kst", "--checkpoint",
                 tmp_path / "ckpt", ok=False)
    assert result.stderr.strip() == ("error: --checkpoint is not supported by this estimator "
                                     "(GoGPRegressor has no parameter 'checkpoint')")


def test_fit_writes_a_checkpoint_and_resumes_from_it(regression_csv, tmp_path):
    """``--checkpoint`` and ``--checkpoint-every`` set the estimator's parameters, ``--resume``
    continues from the file: the same model as the fit that wrote it."""
    X, y, path = regression_csv
    options = [path, "--task", "regression", *small_options()]
    run("fit", *options, "-o", tmp_path / "a.kst", "--checkpoint", tmp_path / "fit.ckpt",
        "--checkpoint-every", 2, "--quiet")
    assert load(tmp_path / "a.kst").checkpoint_every == 2 and (tmp_path / "fit.ckpt").is_file()
    run("fit", *options, "-o", tmp_path / "b.kst", "--resume", tmp_path / "fit.ckpt",
        "--checkpoint-every", "10min", "--quiet")
    np.testing.assert_array_equal(load(tmp_path / "b.kst").predict(X),
                                  load(tmp_path / "a.kst").predict(X))
    result = run("fit", *options, "-o", tmp_path / "c.kst", "--resume", tmp_path / "fit.ckpt",
                 "--alpha", 1e-3, "--quiet", ok=False)
    assert result.stderr.startswith("error: Checkpoint") and "other parameters" in result.stderr


def _failures(a9a_model, regression_csv, tmp_path):
    X, y, csv_path = regression_csv
    garbage = tmp_path / "garbage.svm"
    garbage.write_text("1 1:0.5\nthis is not libsvm\n")
    wide = tmp_path / "wide.csv"
    np.savetxt(wide, np.column_stack([X, X[:, :1], y]), delimiter=",")
    renamed = tmp_path / "renamed.csv"
    np.savetxt(renamed, np.column_stack([X, y]), delimiter=",", header="v,u,target", comments="")
    unlabelled = tmp_path / "unlabelled.csv"
    np.savetxt(unlabelled, X, delimiter=",")
    (tmp_path / "bad.toml").write_text('kernal = "rbf"\n')
    return {
        "missing data file": (["fit", tmp_path / "absent.svm", "--task", "classification", "-o",
                               tmp_path / "m.kst"], "absent.svm: no such file"),
        "missing model file": (["evaluate", tmp_path / "absent.kst", csv_path], "No model file"),
        "unknown option": (["fit", csv_path, "--kernal", "rbf"], "No such option '--kernal'"),
        "unknown command": (["train", csv_path], "No such command 'train'"),
        "unknown estimator": (["fit", csv_path, "--estimator", "svm", "-o", tmp_path / "m.kst"],
                              "unknown estimator 'svm'"),
        "unknown parameter": (["fit", csv_path, "--task", "regression", "-p", "sigmaa=1",
                               "-o", tmp_path / "m.kst"], "did you mean 'sigma'"),
        "bad parameter value": (["fit", csv_path, "--task", "regression", "--sigma", "-1",
                                 "-o", tmp_path / "m.kst"], "'sigma' parameter of DSGRegressor"),
        "task needed": (["fit", csv_path, "-o", tmp_path / "m.kst"], "pass --task"),
        "wrong format": (["fit", garbage, "--task", "classification", "-o", tmp_path / "m.kst"],
                         "line 2: not a LIBSVM line"),
        "format option": (["fit", csv_path, "--format", "xls"], "Invalid value for '--format'"),
        "not a model": (["info", csv_path], "not a readable kernelstream model"),
        "std on a classifier": (["predict", a9a_model, csv_path, "--std"],
                                "holds a DSGClassifier"),
        "proba on a regressor": (["predict", tmp_path / "reg.kst", csv_path, "--proba"],
                                 "holds a DSGRegressor"),
        "wrong width": (["evaluate", tmp_path / "reg.kst", wide],
                        "3 features, the model expects 2"),
        "no labels": (["evaluate", tmp_path / "reg.kst", unlabelled],
                      "no labels to evaluate"),
        "bad config key": (["fit", csv_path, "--config", tmp_path / "bad.toml"],
                           "unknown key 'kernal'"),
        "output directory missing": (["fit", csv_path, "--task", "regression", "-o",
                                      tmp_path / "no" / "m.kst"], "does not exist"),
        "columns renamed": (["evaluate", tmp_path / "reg.kst", renamed],
                            "are not the training file's ['u', 'v']"),
        "task mismatch": (["fit", csv_path, "--task", "regression", "--estimator", "aogd",
                           "-o", tmp_path / "m.kst"], "does not do regression"),
    }


def test_every_failure_is_one_line_and_a_nonzero_exit(a9a_model, regression_csv, tmp_path):
    X, y, csv_path = regression_csv
    run("fit", csv_path, "--task", "regression", "-o", tmp_path / "reg.kst", "--n-components", 64,
        "--sigma", 1.0, "--alpha", 1e-4, "--max-iter", 1, "-q")
    for name, (args, message) in _failures(a9a_model, regression_csv, tmp_path).items():
        result = run(*args, ok=False)
        lines = result.stderr.strip().splitlines()
        assert result.exit_code == 2, (name, result.exit_code, result.stderr)
        assert len(lines) == 1 and lines[0].startswith("error: "), (name, result.stderr)
        assert message in lines[0], (name, lines[0])
        assert result.exception is None or isinstance(result.exception, SystemExit), name


def test_checkpoint_options_reach_a_fit_that_takes_them():
    from kernelstream.cli.models import CliError, fit_options

    class Resumable:
        def fit(self, X, y, resume=None, checkpoint=None, checkpoint_every=None):
            return self

    requested = {"resume": "a.ckpt", "checkpoint": "b.ckpt", "checkpoint_every": 5}
    assert fit_options(Resumable(), requested) == requested
    assert fit_options(Resumable(), {"resume": None, "checkpoint": None}) == {}
    with pytest.raises(CliError, match="--checkpoint-every is not supported"):
        fit_options(GoGPRegressor(), {"checkpoint_every": 5})


def test_fit_reads_the_labels_of_an_npz_file_by_default(tmp_path):
    """Issue 30: ``kernelstream fit abalone.npz --task regression`` said "no labels to fit on
    (--label none)" although the file has ``y``, the documented default."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (200, 3)).astype(np.float32)  # abalone.npz's dtype
    np.savez(tmp_path / "rows.npz", X=X, y=X[:, 0].astype(np.float32))
    report = json.loads(run("fit", tmp_path / "rows.npz", "--task", "regression", "-o",
                            tmp_path / "m.kst", *small_options(), "--json").output)
    assert report["rows"] == 200 and report["features"] == 3
    result = run("fit", tmp_path / "rows.npz", "--task", "regression", "-o", tmp_path / "m.kst",
                 "--label", "X", ok=False)
    assert result.exit_code == 2
    assert "'X' holds the rows, whose labels are 'y': pass --label y" in result.stderr


def test_a_missing_resume_file_is_refused_before_the_data_is_read(tmp_path):
    """Issue 30: ``--resume missing.ckpt`` read the data and started the fit before failing."""
    result = run("fit", tmp_path / "absent.csv", "--task", "regression", "-o", tmp_path / "m.kst",
                 "--resume", tmp_path / "missing.ckpt", ok=False)
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: --resume {tmp_path / 'missing.ckpt'}: no such " \
                                    "checkpoint file"


def test_the_proba_error_names_the_classifiers_that_have_probabilities(tmp_path):
    """Issue 30: the message named only ``loss='logistic'``, although a default DSGClassifier
    has ``predict_proba``."""
    path = tmp_path / "two.csv"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    np.savetxt(path, np.column_stack([X, X[:, 0] > 0]), delimiter=",", header="a,b,y",
               comments="")
    run("fit", path, "--estimator", "aogd", "-o", tmp_path / "aogd.kst", "-q")
    result = run("predict", tmp_path / "aogd.kst", path, "--proba", ok=False)
    assert result.exit_code == 2
    assert "DSGClassifier with its default loss or loss='logistic'" in result.stderr
    assert "holds a AOGDClassifier without it" in result.stderr


_KILLED_CLI_FIT = """
import sys
from kernelstream.cli import main
main(["fit", {csv!r}, "--task", "regression", "-p", "block_size=256", "-o", {out!r},
      "--checkpoint", sys.argv[1], "--quiet"], standalone_mode=False)
"""


@pytest.mark.slow
def test_a_checkpointed_fit_killed_and_resumed_is_the_fit_without_a_checkpoint(tmp_path):
    """``fit --checkpoint`` of the engine's defaults in a real process killed with SIGKILL after
    its first checkpoint (the choice); ``fit --resume`` of it writes the model that ``fit``
    without a checkpoint writes, to the last bit of its predictions."""
    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, (20000, 2))
    y = np.sin(3 * X[:, 0]) * np.cos(3 * X[:, 1]) + 0.05 * rng.standard_normal(20000)
    csv_path = tmp_path / "train.csv"
    np.savetxt(csv_path, np.column_stack([X, y]), delimiter=",", header="u,v,target", comments="")
    killed = tmp_path / "killed.ckpt"
    kill_after_writes(_KILLED_CLI_FIT.format(csv=str(csv_path), out=str(tmp_path / "never.kst")),
                      killed, 1)
    assert not (tmp_path / "never.kst").exists()
    options = [csv_path, "--task", "regression", "-p", "block_size=256", "--quiet"]
    run("fit", *options, "-o", tmp_path / "resumed.kst", "--resume", killed)
    run("fit", *options, "-o", tmp_path / "whole.kst")
    resumed, whole = load(tmp_path / "resumed.kst"), load(tmp_path / "whole.kst")
    assert resumed.fit_plan_.stages[0]["stage"] == "features"  # the choice was read back
    np.testing.assert_array_equal(resumed.predict(X), whole.predict(X))
