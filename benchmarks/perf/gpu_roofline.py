"""The fused Triton feature kernel against the device's matmul peak (a GPU roofline).

For each problem (rows n, input dimension d, features D = J·r in J blocks, C outputs) it times
``Σ_j ψ_j(X) c_j`` — the contraction every fit and predict is built of — three ways on the device:

- ``matmul``: the projection alone, ``(n×d)·(d×D/2)`` by ``torch.matmul`` (the bound: the fused
  kernel does this product and then only elementwise work and a thin contraction);
- ``torch``: the feature map's own torch path (parameters drawn, GEMM, cos/sin, GEMM);
- ``triton``: :func:`kernelstream.ops.triton_fourier.contract` (frequencies drawn in the kernel).

FLOPs counted: ``2·n·d·D/2`` (projection) ``+ 2·n·D·C`` (contraction). The table gives TFLOP/s
and each path's share of the device's measured float32 and TF32 matmul peaks (8192³). Times
are the min and median of ``--repeats`` after a warm-up, with ``torch.cuda.synchronize``.

    python -m benchmarks.perf.gpu_roofline --out benchmarks/results     # on a CUDA device
    python -m benchmarks.perf.gpu_roofline --quick                      # seconds; CPU: torch only
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from benchmarks.common.machine import machine_line
from benchmarks.common.report import markdown_table, write_report
from benchmarks.common.timing import measure
from kernelstream.features import make_feature_map

#: (name, rows n, input dimension d): a9a's and MNIST's training sets
PROBLEMS = (("a9a", 32561, 123), ("MNIST", 60000, 784))
QUICK_PROBLEMS = (("a9a-quick", 512, 123), ("MNIST-quick", 512, 784))
HEADER = ["problem", "n", "d", "D (J×r)", "C", "path", "ms (min / med)", "TFLOP/s",
          "of fp32 peak", "of TF32 peak", "of the same-shape matmul"]


def synchronized(fn, device: torch.device):
    """``fn`` followed by a device synchronisation, so wall time covers the work."""
    def run():
        result = fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return result
    return run


def seconds(fn, device: torch.device, repeats: int) -> tuple[float, float]:
    timing = measure(synchronized(fn, device), repeats=repeats, warmup=1)
    return timing.min("wall"), timing.median("wall")


def matmul_peak(device: torch.device, tf32: bool, size: int, repeats: int) -> float:
    """FLOP/s of a ``size³`` float32 matmul (TF32 tensor cores when ``tf32``)."""
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        A = torch.randn(size, size, device=device)
        B = torch.randn(size, size, device=device)
        best, _ = seconds(lambda: A @ B, device, repeats)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    return 2 * size**3 / best


def problem_rows(name: str, n: int, d: int, D: int, r: int, C: int, device: torch.device,
                 peaks: tuple[float, float], repeats: int) -> list[list[object]]:
    J, h = D // r, D // 2
    fm = make_feature_map("rbf", d, float(d) ** 0.5, r, seed=2**40 + 7)
    g = torch.Generator(device="cpu").manual_seed(n + d)
    X = torch.rand(n, d, generator=g).to(device)
    coef = torch.randn(J, r, C, generator=g).to(device)
    W = torch.randn(d, h, generator=g).to(device)
    flops = 2 * n * d * h + 2 * n * D * C
    paths = {"matmul": lambda: X @ W, "torch": lambda: fm.contract(X, coef)}
    if device.type == "cuda":
        from kernelstream.ops import triton_fourier

        paths["triton"] = lambda: triton_fourier.contract(X, coef, fm)
    times = {path: seconds(fn, device, repeats) for path, fn in paths.items()}
    rows = []
    for path, (best, median) in times.items():
        rate = flops / best if path != "matmul" else 2 * n * d * h / best
        rows.append([name, n, d, f"{D:,} ({J}×{r})", C, path,
                     f"{best * 1e3:.2f} / {median * 1e3:.2f}", f"{rate / 1e12:.2f}",
                     f"{rate / peaks[0]:.2f}", f"{rate / peaks[1]:.2f}",
                     f"{times['matmul'][0] / best:.2f}"])
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", type=int, nargs="+", default=[8192, 32768])
    parser.add_argument("--block-size", type=int, default=1024)
    parser.add_argument("--outputs", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="512 rows, 2,048 features: seconds")
    parser.add_argument("--out", type=Path, help="write DIR/gpu_roofline.md")
    args = parser.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    problems, features = (QUICK_PROBLEMS, [2048]) if args.quick else (PROBLEMS, args.features)
    peak_size = 1024 if args.quick or device.type == "cpu" else 8192
    peaks = (matmul_peak(device, False, peak_size, args.repeats),
             matmul_peak(device, True, peak_size, args.repeats))
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"device: {name}; {peak_size}³ matmul: float32 {peaks[0] / 1e12:.1f} TFLOP/s, "
          f"TF32 {peaks[1] / 1e12:.1f} TFLOP/s", flush=True)
    head = [f"Device: {name}, torch {torch.__version__}; {peak_size}³ matmul peaks measured in "
            f"the same run: float32 {peaks[0] / 1e12:.1f} TFLOP/s, TF32 {peaks[1] / 1e12:.1f} "
            "TFLOP/s.", "", machine_line(), ""]
    rows, configs = [], [(p, D, C) for p in problems for D in features for C in args.outputs]
    for done, (problem, D, C) in enumerate(configs, start=1):
        new = problem_rows(*problem, D, args.block_size, C, device, peaks, args.repeats)
        for line in markdown_table(HEADER, new)[2:]:
            print(line, flush=True)
        rows += new
        if args.out:  # after every problem, so that a run cut short keeps what it measured
            cut = [] if done == len(configs) else [
                f"Cut short: {done} of {len(configs)} problems measured when the file was last "
                "written.", ""]
            write_report(args.out / "gpu_roofline.md", "The fused Triton feature kernel against "
                         "the device's matmul peak", head + cut + markdown_table(HEADER, rows))
    print("\n".join(head + markdown_table(HEADER, rows)))

if __name__ == "__main__":
    main()
