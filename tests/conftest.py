import os

import pytest

for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")


@pytest.fixture
def umask_000():
    """The test runs under umask 000 (every permission a new file could get): modes that stay
    0600 / 0700 then come from the code, not from the user's umask."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)
