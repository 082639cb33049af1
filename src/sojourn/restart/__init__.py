"""Restart study (seed 001): multi-class G-networks of processor-sharing queues with restart signals.

``model`` (validated network spec), ``schema`` and ``files`` (YAML model files, built-in examples),
``product_form`` (traffic equations, product-form measures, the single-queue closed form and g*),
``kernel`` and ``simulate`` (numba simulation under signal and timeout semantics, xarray API),
``optimise`` (g* beside the simulated timeout optimum), ``grid``/``config_check``/``solve_sweep``/``sweep``/
``compare``/``plots`` (the pipeline's jobs, one Dask task per replication), ``cli`` (``sojourn restart ...``).
"""
