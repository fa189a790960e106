"""The controller: a pure core, its Kubernetes adapter and loop, and the webhook's server.

The core (``optin``, ``template``, ``objects``, ``desired``, ``changes``, ``notices``,
``settings``; ``sidecar``, ``admission``) decides from plain values and does no I/O (a
contract). The adapter reads and writes through the kubernetes client (``kube_calls``,
``kube_io``), a round and a namespace's pass are ``reconcile`` and ``writes``, the loop is
``runner``; ``webhook_server`` serves the admission webhook.
"""
