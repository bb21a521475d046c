import subprocess
import sys

import visiontune
from visiontune.cli import main


def test_version_flag_prints_package_version(capsys):
    try:
        main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    assert visiontune.__version__ in capsys.readouterr().out


def test_help_runs_as_module():
    out = subprocess.run([sys.executable, "-m", "visiontune", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "usage: visiontune" in out.stdout
