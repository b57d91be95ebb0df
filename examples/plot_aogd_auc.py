"""
Online AUC maximisation on an imbalanced stream
===============================================

``AOGDClassifier`` learns a ranking function from pairs, one example at a time, on
scikit-learn's digits as an imbalanced task: is it an 8 (one image in ten) or not? The test
ROC AUC is measured as the stream goes on, next to scikit-learn's ``SGDClassifier`` (hinge
loss, ``partial_fit``) on the same number of random features.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from kernelstream import AOGDClassifier, RandomFeatures

X, digit = load_digits(return_X_y=True)
X, y = X / 16.0, np.where(digit == 8, 1, -1)        # pixels in [0, 1]; 8 against the rest
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.4, random_state=0,
                                                    stratify=y)
print(f"{len(X_train)} training examples, {np.mean(y_train == 1):.1%} positive")

aogd = AOGDClassifier(random_state=0)
features = RandomFeatures(n_components=1024, random_state=0).fit(X_train)
sgd = SGDClassifier(random_state=0)
seen, auc_aogd, auc_sgd = [], [], []
for start in range(0, len(X_train), 32):           # the stream, in chunks of 32 examples
    X_chunk, y_chunk = X_train[start:start + 32], y_train[start:start + 32]
    aogd.partial_fit(X_chunk, y_chunk, classes=[-1, 1])
    sgd.partial_fit(features.transform(X_chunk), y_chunk, classes=[-1, 1])
    seen.append(start + len(X_chunk))
    auc_aogd.append(aogd.score(X_test, y_test))    # score is the ROC AUC
    auc_sgd.append(roc_auc_score(y_test, sgd.decision_function(features.transform(X_test))))
print(f"test AUC after one pass: AOGD {auc_aogd[-1]:.3f}, SGDClassifier {auc_sgd[-1]:.3f}")

# %%
fig, ax = plt.subplots(figsize=(7, 3.6), constrained_layout=True)
ax.plot(seen, auc_aogd, label="AOGDClassifier")
ax.plot(seen, auc_sgd, label="SGDClassifier (hinge) on RandomFeatures")
ax.set(xlabel="examples seen", ylabel="test ROC AUC", ylim=(0.6, 1.0))
ax.legend(loc="lower right")
plt.show()
