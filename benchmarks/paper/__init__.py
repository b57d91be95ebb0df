"""Scripts for the experiments of Dai et al. 2014, Section 7 (Figures 4, 5 and 6 of the long
version): ``python -m benchmarks.paper.NAME [--quick]``, results in ``benchmarks/results/paper``.

- :mod:`.synthetic_krr`: kernel ridge regression on the 2-D synthetic set, seven methods.
- :mod:`.svm`: kernel SVM on a9a and MNIST 8 vs 6 under the stopping criteria SC1 and SC2.
- :mod:`.gp_vs_norma`: Gaussian-process posterior, ``DSGGaussianProcessRegressor`` against NORMA.
"""
