import sys

from nalu_research.records import main

sys.exit(main())
