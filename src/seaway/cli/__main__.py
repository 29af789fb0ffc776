import sys

from seaway.cli import main

sys.exit(main())
