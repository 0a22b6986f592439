"""Helpers several test modules share (a module, not a conftest fixture, so
that each test module imports what it uses by name)."""

import contextlib


def small_net(**params):
    """A small, seeded NetClassifier (16 hidden units, 4 epochs) for tests
    that need a net, not a good one; ``params`` override the defaults."""
    from sklcalib.net import NetClassifier  # torch is an optional extra

    defaults = {"module__hidden_units": (16,), "max_epochs": 4, "random_state": 0}
    return NetClassifier(**{**defaults, **params})


@contextlib.contextmanager
def local_dask_client(*, processes, **client_params):
    """A two-worker, one-thread-each dask ``LocalCluster`` and its client,
    closed on exit; ``processes=True`` starts worker processes."""
    import distributed  # the dask extra

    # worker processes listen on the loopback interface; an in-process
    # cluster needs no address
    where = {"host": "127.0.0.1"} if processes else {}
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=processes,
        dashboard_address=None,
        **where,
    )
    client = distributed.Client(cluster, **client_params)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
