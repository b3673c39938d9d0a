"""N ranks as one launch (`python -m kvbench.cluster.launch`): what the launcher says (torchrun,
srun, mpirun, PMI), the rendezvous with rank 0 and its coordinator, who measures whom each round
(schedule), one rank's share of the pattern, and the far side's process (`python -m
kvbench.cluster.peer`) that serves a NIXL target."""
