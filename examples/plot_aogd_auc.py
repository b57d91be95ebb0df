"""
Online AUC maximisation on an imbalanced stream
===============================================

``AOGDClassifier`` learns a ranking function from pairs, one example at a time, on scikit-learn's
breast-cancer data made imbalanced (one malignant case for every six benign ones). The test AUC
is measured as the stream goes on, against scikit-learn's ``SGDClassifier`` (hinge loss,
``partial_fit``) on the same random features.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from kernelstream import AOGDClassifier, RandomFeatures

X, y = load_breast_cancer(return_X_y=True)          # y = 0: malignant, 1: benign
rng = np.random.default_rng(0)
malignant = rng.choice(np.flatnonzero(y == 0), 60, replace=False)   # 357 benign stay
keep = np.concatenate([np.flatnonzero(y == 1), malignant])
X, y = StandardScaler().fit_transform(X[keep]), np.where(y[keep] == 0, 1, -1)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.4, random_state=0,
                                                    stratify=y)
order = rng.permutation(len(X_train))
X_train, y_train = X_train[order], y_train[order]
print(f"{len(X_train)} training examples, {np.mean(y_train == 1):.1%} positive")

aogd = AOGDClassifier(random_state=0)
features = RandomFeatures(n_components=1024, random_state=0).fit(X_train)
sgd = SGDClassifier(random_state=0)
seen, auc_aogd, auc_sgd = [], [], []
for start in range(0, len(X_train), 16):           # chunks of 16 examples
    X_chunk, y_chunk = X_train[start:start + 16], y_train[start:start + 16]
    aogd.partial_fit(X_chunk, y_chunk, classes=[-1, 1])
    sgd.partial_fit(features.transform(X_chunk), y_chunk, classes=[-1, 1])
    seen.append(start + len(X_chunk))
    auc_aogd.append(aogd.score(X_test, y_test))
    auc_sgd.append(roc_auc_score(y_test, sgd.decision_function(features.transform(X_test))))
print(f"test AUC after one pass: AOGD {auc_aogd[-1]:.3f}, SGDClassifier {auc_sgd[-1]:.3f}")

# %%
fig, ax = plt.subplots(figsize=(7, 3.6))
ax.plot(seen, auc_aogd, label="AOGDClassifier")
ax.plot(seen, auc_sgd, label="SGDClassifier (hinge) on RandomFeatures")
ax.set(xlabel="examples seen", ylabel="test ROC AUC", ylim=(0.5, 1.0))
ax.legend(loc="lower right")
plt.show()
