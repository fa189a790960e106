"""keda-ray-scaler: KEDA autoscaling for Ray worker groups with Ray's own semantics."""

__version__ = "0.1.0"
