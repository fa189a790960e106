"""The KEDA external scaler gRPC service."""
