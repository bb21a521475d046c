import sys

from visiontune.cli import main

sys.exit(main())
