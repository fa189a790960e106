"""``python -m keda_ray_scaler``."""

import sys

from keda_ray_scaler.cli import main

sys.exit(main())
