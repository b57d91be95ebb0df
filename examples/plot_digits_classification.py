"""
Digits: ten-class classification
================================

``DSGClassifier()`` on scikit-learn's 8×8 digits (1,797 images, ten classes) against an RBF
``SVC`` with its defaults. On so few rows ``fit`` takes the exact dual route: one-vs-rest least
squares, ``sigma`` and ``alpha`` by leave-one-out, and ``predict_proba`` from a temperature
fitted on the leave-one-out outputs (``loss_`` is "squared"; the softmax is the default when
epochs train a multiclass model).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.metrics import ConfusionMatrixDisplay
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC

from kernelstream import DSGClassifier

X, y = load_digits(return_X_y=True)
X = X / 16.0                                        # pixels in [0, 1]
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0,
                                                    stratify=y)

clf = DSGClassifier(random_state=0).fit(X_train, y_train)
svc = SVC().fit(X_train, y_train)
print(f"DSGClassifier test accuracy {clf.score(X_test, y_test):.3f} "
      f"({clf.n_components_} features, sigma_={clf.sigma_:.3g}, alpha_={clf.alpha_:g})")
print(f"SVC           test accuracy {svc.score(X_test, y_test):.3f}")

# %%
# The confusion matrix, and the test images the model is least sure of.
fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
ConfusionMatrixDisplay.from_predictions(y_test, clf.predict(X_test), ax=axes[0],
                                        colorbar=False)
proba = clf.predict_proba(X_test)
least_sure = np.argsort(proba.max(axis=1))[:8]
strip = np.hstack([X_test[i].reshape(8, 8) for i in least_sure])
axes[1].imshow(strip, cmap="gray_r")
axes[1].set_title("least confident: " + " ".join(str(clf.classes_[proba[i].argmax()])
                                                 for i in least_sure))
axes[1].axis("off")
plt.show()
