"""Entry script of the frozen bundle (PyInstaller): ``visiontune [COMMAND ...]``.

Frozen, ``sys.executable`` is the bundle's ``visiontune`` program, not a Python interpreter,
yet the PsychoPy renderer starts its window process as
``[sys.executable, "-m", "visiontune.display._psychopy_child"]``
(``visiontune/display/psychopy_renderer.py``). So this script answers ``-m MODULE`` for the
child modules listed in :data:`CHILD_MODULES` (bundled as hidden imports: nothing imports
them statically) by calling ``MODULE.main()``; everything else goes to
``visiontune.cli.main``. ``multiprocessing.freeze_support()`` lets a frozen
``multiprocessing`` spawn re-enter here.
"""

from __future__ import annotations

import os
import sys

#: Modules the bundle runs with ``visiontune -m MODULE`` (each has ``main() -> int``).
CHILD_MODULES = ("visiontune.display._psychopy_child",)


def main(argv: list[str] | None = None) -> int:
    import multiprocessing

    multiprocessing.freeze_support()
    argv = list(sys.argv[1:] if argv is None else argv)
    # The GUI process imports PySide6 only (docs/design.md, "PsychoPy and Qt in one application").
    os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")
    import visiontune  # noqa: F401  (sets the BLAS thread variables before numpy loads)

    if argv[:1] == ["-m"]:
        if len(argv) < 2 or argv[1] not in CHILD_MODULES:
            print(f"visiontune: -m: the bundle runs only {', '.join(CHILD_MODULES)}", file=sys.stderr)
            return 2
        import importlib

        module = importlib.import_module(argv[1])
        sys.argv = [sys.executable, *argv[2:]]
        return int(module.main() or 0)
    from visiontune.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
