"""Sphinx configuration of the kernelstream documentation (``make docs``, ``make docs-quick``).

``KERNELSTREAM_DOCS_QUICK=1`` (``make docs-quick``, CI) runs only the gallery examples that are
not listed in ``sitegen.SLOW_EXAMPLES``; the others are rendered without their output.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT / "src"))  # document this checkout, whatever is installed
sys.path.insert(0, str(DOCS))

import kernelstream  # noqa: E402
from sitegen import gallery_pattern, write_result_pages  # noqa: E402

project = "kernelstream"
author = "the kernelstream developers"
copyright = "the kernelstream developers"
version = release = kernelstream.__version__

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
templates_path = ["_templates"]

# -- MyST: the README and the benchmark results are included, not copied ---------------------
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# -- API reference ------------------------------------------------------------------------------
autosummary_generate = True
autosummary_ignore_module_all = False  # a module's __all__ is its public API
autodoc_typehints = "none"          # numpydoc's Parameters sections carry the types
autodoc_member_order = "bysource"
numpydoc_show_class_members = False  # the class template lists the methods
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False


def skip_scikit_learn_members(app, what, name, obj, skip, options):
    """Leave out what scikit-learn's base classes give the estimators (``score``,
    ``get_params``, ``set_output``, ``set_*_request``, ...): scikit-learn documents it."""
    defined_in = getattr(obj, "__module__", None) or getattr(getattr(obj, "fget", None),
                                                            "__module__", None) or ""
    return True if defined_in.split(".")[0] == "sklearn" else None


def setup(app):
    app.connect("autodoc-skip-member", skip_scikit_learn_members)

# -- Gallery ------------------------------------------------------------------------------------
QUICK = os.environ.get("KERNELSTREAM_DOCS_QUICK", "") not in ("", "0")

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": gallery_pattern(QUICK),
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "doc_module": ("kernelstream",),
    "backreferences_dir": "api/backreferences",
    "reference_url": {"kernelstream": None},
}

# -- HTML ---------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"kernelstream {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path: list[str] = []
html_show_sourcelink = False

# the benchmark results: one page per committed results file (docs/results/, generated)
write_result_pages(ROOT / "benchmarks" / "results", DOCS / "results")
