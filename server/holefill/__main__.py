import sys

from holefill.cli import main

sys.exit(main())
