"""Bin packing of resource shapes onto existing and new worker pods; pure, no I/O.

Everything works on ``(shape, count)`` pairs and on *classes* of interchangeable pods (same
group, same total, same free vector): placing ``k`` copies of a shape on a class is arithmetic,
so the cost grows with distinct shapes and distinct pod classes, never with the bundle count.

- :mod:`.shapes`: vectors, group capacities, the injected strategies (orderer, scorer);
- :mod:`.limits`: how many new pods may still be opened (maxReplicas, maxWorkers, pace);
- :mod:`.existingpods`: pods that run, as classes of identical free space;
- :mod:`.newpods`: planned pods as classes of identical free space;
- :mod:`.memo`: what follows from a shape alone (the groups that can hold it, its scores),
  remembered for every fork;
- :mod:`.packer`: the packer (first-fit decreasing with rollouts), :mod:`.patterns` (cutting
  stock) and :mod:`.spread` (STRICT_SPREAD gangs).
"""
