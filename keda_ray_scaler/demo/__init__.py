"""The local demo: real Ray, the real agent and scaler over real gRPC, no Kubernetes, no Prometheus.

``keda-ray-scaler demo`` (``cli/demo.py``) builds :func:`keda_ray_scaler.demo.run.run_demo`:

- ``run.py``: the composition and its poll loop; ``demo_settings.py``: what it runs
  (:class:`~keda_ray_scaler.demo.demo_settings.DemoSettings`);
- ``driver.py``: starts the workload's driver process and reads the events it prints;
- ``record.py``: the printed timeline and the :class:`~keda_ray_scaler.demo.record.DemoResult`;
- ``raylets.py``: a Ray head (``--num-cpus 0``) and worker raylets on 127.0.0.1, one process group
  each, stopped by PID;
- ``pods.py``: an in-memory stand-in for the pods API and the agent's pod cache;
- ``controller.py``: a simulated Deployment/ReplicaSet controller that starts and stops worker
  raylets to match the replica count, deleting pods in the ReplicaSet's own ranking order
  (lowest ``pod-deletion-cost`` first);
- ``keda.py``: a KEDA/HPA stand-in calling the scaler's gRPC service as KEDA does;
- ``workload.py``: the Ray driver that submits the demo's tasks (a subprocess).
"""
