"""Every benchmark script, the question it answers and the result files it writes.

``python -m benchmarks`` prints this table; ``python -m benchmarks run NAME [--quick] [ARGS]``
runs one script as ``python -m MODULE ARGS`` would. The exact command behind each committed file
(its options, its ``--out``) is the first line of the file and the table of
``benchmarks/results/README.md``. Result files whose script was retired — a research probe whose
finding is now a decision record — are listed in :data:`ARCHIVED` with that record.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Benchmark", "BENCHMARKS", "ARCHIVED", "RESULTS", "find", "origin"]

#: the folder of the committed results
RESULTS = Path(__file__).resolve().parent / "results"

QUICK = ("--quick",)


@dataclass(frozen=True)
class Benchmark:
    """One script: ``python -m benchmarks run NAME`` runs ``python -m MODULE``."""

    #: the name on the command line: the module path below ``benchmarks``
    name: str
    #: one line: what it measures
    question: str
    #: what it writes under ``benchmarks/results`` (files, folders ending in ``/``, or globs)
    results: tuple[str, ...] = ()
    #: the arguments of a run of seconds (``None``: the script has none)
    quick: tuple[str, ...] | None = QUICK
    #: how the script takes ``--out``: a folder ("dir"), a file ("file"), or not at all (None)
    out: str | None = "dir"

    @property
    def module(self) -> str:
        return f"benchmarks.{self.name}"

    def writes(self, path: str) -> bool:
        """Whether ``path`` (relative to the results folder, ``/``-separated) is one of ours."""
        return any(path == r or (r.endswith("/") and path.startswith(r)) or fnmatch.fnmatch(path, r)
                   for r in self.results)


BENCHMARKS: tuple[Benchmark, ...] = (
    # -- the paper's algorithm and the default solver -----------------------------------------
    Benchmark("synthetic", "one pass of DSGRegressor() on the paper's 2-D set vs RBFSampler and "
              "Nystroem + Ridge; MSE after every step (Figure 1(2)); make bench",
              ("synthetic.md", "synthetic_convergence.png")),
    Benchmark("solver", "the default solver against the normal equations, plain SGD and the "
              "paper's algorithm on one feature set", ("solver.md",), out="file"),
    Benchmark("kernels", "Gram-matrix error and speed of every feature family against "
              "scikit-learn's samplers", ("kernels.md", "kernels.png")),
    Benchmark("mnist10", "MNIST ten classes with DSGClassifier() defaults",
              ("mnist10.md", "mnist10_defaults.md")),
    Benchmark("threads", "a9a with defaults under thread settings while a busy process holds a "
              "core", ("threads.md",)),
    # -- Gaussian processes -------------------------------------------------------------------
    Benchmark("gp", "DSGGaussianProcessRegressor against the closed-form posterior on the "
              "paper's GP set (Figure 5)", ("gp.md", "gp.png", "gp.json")),
    Benchmark("gp_scale", "the GP mean against scikit-learn's exact GP as n grows: time, memory, "
              "RMSE", ("gp_scale.md", "gp_scale.json")),
    Benchmark("gp_defaults", "DSGGaussianProcessRegressor() defaults against scikit-learn's "
              "optimised GP on abalone: time, RMSE, coverage", ("gp_defaults.md",)),
    Benchmark("gogp", "GoGP on abalone against exact GP, SVGP, river and DSG; update time",
              ("gogp.md", "gogp_update_time.png")),
    Benchmark("gogp_partial_fit", "GoGPRegressor.partial_fit row by row against the solver's "
              "update alone", ("gogp_partial_fit.md",)),
    Benchmark("gogp_throughput", "GoGPRegressor() points/s on a 36,000-row 8-feature synthetic "
              "stream: fit, partial_fit one row at a time with |U| full; 95% coverage",
              ("gogp_throughput.md",)),
    # -- AUC maximisation ---------------------------------------------------------------------
    Benchmark("aogd", "the AOGD paper's Table 2 protocol against OGD-last and reservoir OGD "
              "(actions run, flat, report)", ("aogd.md", "aogd.png", *(f"aogd/{name}.json" for name in
                                                           ("diabetes", "german", "a9a", "usps",
                                                            "mnist", "flat_time")),
                                              "aogd/average/", "aogd/invscaling/", "aogd/kfold/",
                                              "aogd/seeds5-24/"),
              quick=("run", "diabetes", "--quick")),
    Benchmark("research.aogd_ceiling", "batch models on the AOGD splits of diabetes and german: "
              "how high can test AUC go (read by the aogd report)", ("aogd/ceiling.json",)),
    # -- speed and defaults against peers -----------------------------------------------------
    Benchmark("perf.peers", "time to a target error against LinearSVC, RBFSampler, Nystroem, "
              "SVC and GPyTorch", ("peers.md", "peers_mnist8v6.md", "peers_synthetic.md"),
              out="file"),
    Benchmark("perf.shared_defaults", "DSGClassifier() / DSGRegressor() defaults against tuned "
              "SVC/SVR and Nystroem + Ridge on every shared set and the proxies",
              ("shared_defaults.md", "shared_defaults_*.md"), out="file"),
    Benchmark("time_to_accuracy", "time to accuracy: the defaults against the fastest tuned "
              "peers", ("time_to_accuracy.md", "time_to_accuracy.json")),
    Benchmark("perf.solver_cg", "solver='cg' against the default solver, defaults otherwise",
              ("solver_cg.md",), quick=("--only", "diabetes", "--seeds", "0"), out="file"),
    Benchmark("scaling", "the default fit at 10^4, 10^5 and 10^6 rows (a classification and a "
              "regression set) against Nystroem(1024) + ridge: error, CPU s, features, peak RSS",
              ("scaling.md",), quick=("--sizes", "10000", "--repeats", "1", "--sets",
                                      "classification")),
    Benchmark("effort", "error against time by effort (the named levels and two budgets in "
              "seconds) on a9a and friedman1 at 100,000 rows, against Nystroem(1024) + ridge",
              ("effort.md", "effort.png"), quick=("--quick", "--repeats", "1")),
    Benchmark("small_end", "issue 51's small sets: the defaults against SVC(), a grid-searched SVC, "
              "Nystroem(1024)+Ridge, a KernelRidge grid and scikit-learn's GP, one thread",
              ("small_end.md",)),
    Benchmark("river_adapters", "the river adapters' rows a second in progressive_val_score "
              "(Phishing, ImageSegments, TrumpApproval) against river's own models, one thread",
              ("river_adapters.md",), quick=("--repeats", "1")),
    Benchmark("perf.gp_exact_route", "the GP's exact solve against its dual iteration by rows "
              "(friedman1, hyper-parameters given): fit CPU s and RMSE", ("gp_exact_route.md",)),
    Benchmark("perf.engine_variants", "every loss, max_iter and solver='cg' on the fit engine "
              "against the default fit on moons, a9a and friedman1: route, error, CPU s",
              ("engine_variants.md",)),
    Benchmark("novelty", "DSGOneClass and DSGDensityRatio: the engine's Newton fit against the "
              "doubly stochastic steps and OneClassSVM: AUC, share flagged, RMSE of log p/q, CPU s",
              ("novelty.md",), quick=("--quick", "--repeats", "1")),
    Benchmark("perf.fit_cost", "CPU time, error and route of DSGClassifier() on a9a subsets of "
              "1,000 to 32,561 rows", ("fit_cost.md",),
              quick=("--sizes", "1000", "--repeats", "1"), out="file"),
    Benchmark("perf.narrow_products", "a tall matrix by few columns (the cached route's "
              "products) in both operand orders, one thread", ("narrow_products.md",)),
    Benchmark("perf.fused_pass", "a conjugate-gradient iteration's two products over a feature "
              "cache in one pass or two, float16 and float32, one thread", ("fused_pass.md",)),
    Benchmark("perf.half_cache", "the default fit with its feature cache in float16 and in "
              "float32, one thread", ("half_cache.md",), quick=("--rows", "a9a", "--quick")),
    Benchmark("perf.roofline", "matmul and cos times per shape and the fit's share of that bound",
              ("roofline.md",), out="file"),
    Benchmark("perf.gpu_roofline", "the fused Triton feature kernel and the torch path against "
              "the device's matmul peak on a9a- and MNIST-sized problems (CUDA)",
              ("gpu_roofline.md",)),
    Benchmark("perf.sparse_width", "one epoch on CSR rows at 1,000 vs 40,000 columns: time and "
              "peak RSS", ("sparse_width.md",),
              quick=("--rows", "2000", "--repeats", "1", "--memory-repeats", "1")),
    Benchmark("perf.precond_step", "the fused preconditioned step against its torch form "
              "(prints)", (), out=None),
    # -- data at scale ------------------------------------------------------------------------
    Benchmark("scale.sparse_a9a", "a9a from LIBSVM files: densified, CSR and streamed; error, "
              "time, peak RSS", ("sparse_a9a.md", "sparse_a9a.json")),
    Benchmark("scale.beyond_memory", "a generated CSV of 10^7 rows streamed with a cache "
              "smaller than its features (drawn every pass) against the in-memory fit on 10^6 "
              "of its rows: peak RSS, passes, seconds a pass, error", ("beyond_memory.md",)),
    Benchmark("scale.dask_fit", "a9a in memory and as a Dask array on a LocalCluster of two "
              "workers on the engine; wall, error, the models' difference", ("dask_fit.md",)),
    Benchmark("scale.ranks", "a9a as two LIBSVM shards: in memory, streamed by one process, "
              "and two torchrun ranks on the engine; wall, CPU, error", ("ranks.md",)),
    Benchmark("scale.stream", "one epoch's rows/s with 1 and 2 processes and the RSS of a fit "
              "streaming a generated CSV or Parquet file",
              ("stream.md", "stream.json", "stream_memory.png", "stream_throughput.md",
               "stream_throughput.json")),
    # -- the paper's experiments (Dai et al. 2014, Section 7) ---------------------------------
    Benchmark("paper.synthetic_krr", "kernel ridge regression at 2^20 points against NORMA, "
              "SDCA, Pegasos and the 2^8-feature baselines (Figure 4)", ("paper/synthetic_krr.*",)),
    Benchmark("paper.svm", "kernel SVM on a9a and MNIST 8 vs 6 under SC1/SC2 (Figure 6)",
              ("paper/svm.*",)),
    Benchmark("paper.gp_vs_norma", "the GP posterior against NORMA (Figure 5)",
              ("paper/gp_vs_norma.*",)),
    Benchmark("paper.qm7", "QM7 on binarised random Coulomb matrices: the cached route, 5 folds "
              "(record: docs/decisions/cached-route.md)", ("paper/qm7.*", "paper/qm7_fold*")),
    Benchmark("paper.mnist8m_stream", "a seeded stream of deformed digits on PCA-100",
              ("paper/mnist8m_stream*",)),
    Benchmark("paper.mnist_vs_mlp", "the kernel machine against an MLP for the same training "
              "time", ("paper/mnist_vs_mlp.*",)),
    # -- research probes kept because the code cites them -------------------------------------
    Benchmark("research.gp_landmark_operator", "the DTC variance on M Nystrom landmarks against "
              "the exact one (prints; record: docs/decisions/research-gp-variance.md)", (),
              quick=None, out=None),
    Benchmark("research.subsample_then_solve", "issue 32: sigma and alpha by leave-one-out on a "
              "subsample, then one Newton-PCG solve at full size (prints; record: "
              "docs/decisions/research-subsample-then-solve.md)", (), quick=("--quick",), out=None),
    Benchmark("research.ard_lengthscales", "issue 33: per-feature lengthscales by marginal "
              "likelihood or leave-one-out on a subsample, against the isotropic defaults "
              "(record: docs/decisions/ard-lengthscales.md)", ("ard_lengthscales.md",),
              quick=("--quick",), out="file"),
    Benchmark("research.synthetic_bandwidth_rows", "issue 32: the 2-D set's test MSE by bandwidth "
              "and training rows at 1,024 features (record: "
              "docs/decisions/research-synthetic-bandwidth-rows.md)", ("synthetic_bandwidth_rows.md",)),
    Benchmark("research.feature_look_back", "issue 32: each doubling's held-out gain by feature "
              "size on the 2-D set and a rough 4-D set, and the default fit with and without the "
              "look back at half the start size (record: docs/decisions/feature-look-back.md)",
              ("feature_look_back.md",)),
    Benchmark("research.mnist10_basis", "issue 32: MNIST ten classes at a fixed bandwidth, random "
              "Fourier (i.i.d., orthogonal, Sobol) against Nystrom centres, least squares against "
              "the squared hinge on every row (record: docs/decisions/research-mnist10-basis.md)",
              ("mnist10_basis.md",)),
    Benchmark("research.mnist10_nystroem", "issue 32: MNIST ten classes on a Nystrom basis of "
              "16,384 centres, the squared hinge's Newton from zero on every row, the CPU seconds "
              "of each stage (record: docs/decisions/research-mnist10-nystroem.md)",
              ("mnist10_nystroem.md", "mnist10_nystroem_alpha.md", "mnist10_nystroem_hinge.md")),
    Benchmark("research.mnist10_stages", "issue 32: MNIST ten classes with the defaults, the CPU "
              "seconds of each stage of the fit (record: docs/decisions/nystroem-basis.md)",
              ("mnist10_stages.md",), quick=("--quick",)),
)

#: results written by hand or by a retired script, and the page that says where they came from
ARCHIVED: dict[str, str] = {
    "README.md": "benchmarks/results/README.md: the command behind every file",
    "paper.md": "written by hand from the files of paper/ (each names its command)",
    "gpu_h100.md": "device checks on a lent H100 (the commands are in the file); "
                   "docs/decisions/research-feature-budget.md",
    "mnist10_budget.md": "docs/decisions/research-feature-budget.md",
    "dual_hinge.md": "docs/decisions/research-binary-loss.md",
    "dual_hinge_epochs.md": "docs/decisions/research-binary-loss.md",
    "few_rows_multiclass.md": "docs/decisions/research-few-rows-multiclass.md",
    "small_data_features.md": "docs/decisions/research-small-data-features.md",
    "mnist8v6_seeds.md": "docs/decisions/research-mnist8v6-seeds.md",
    "paper/qm7_ceiling.md": "docs/decisions/research-qm7-ceiling.md",
}


def find(name: str) -> Benchmark:
    """The benchmark called ``name``, or the only one whose name ends with ``.name``."""
    exact = [b for b in BENCHMARKS if b.name == name]
    matches = exact or [b for b in BENCHMARKS if b.name.endswith("." + name)]
    if len(matches) != 1:
        names = ", ".join(b.name for b in BENCHMARKS)
        what = "is ambiguous" if matches else "is not a benchmark"
        raise KeyError(f"{name!r} {what}; the benchmarks are: {names}")
    return matches[0]


def origin(path: str) -> list[str]:
    """What wrote the results file ``path`` (relative to the results folder): benchmark names,
    or the archive's entry."""
    found = [b.name for b in BENCHMARKS if b.writes(path)]
    return found or ([ARCHIVED[path]] if path in ARCHIVED else [])
