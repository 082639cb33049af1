"""Study of seed 000: G/G/R-JSQ-PS systems (R processor-sharing servers behind join-the-shortest-queue
dispatch), the SQA approximations A–F of the M/M/R-JSQ-PS sojourn-time CDF, corrected variants and
an exact chain, compared with simulation.

Where things are: the model spec (:mod:`.model`), the simulators (:mod:`.simulate`: numba
:mod:`.kernel` and the Ciw reference :mod:`.ciw_backend`), the analytic methods (:mod:`.analytic`),
the pipeline's cell jobs (:mod:`.simulate_blocks`, :mod:`.approximate_blocks`, storage in
:mod:`.storage`, merges in :mod:`.merging`), the comparison (:mod:`.compare`), the figures
(:mod:`.plots`), the config grid (:mod:`.grid`) and the commands (:mod:`.cli`).
"""
