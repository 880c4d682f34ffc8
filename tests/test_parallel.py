"""Serial, process-pool and dask.distributed runs give the same bytes in the same order."""

from icl.optics import ICL, Detector, Pupil, Scene, Source, render
from icl.parallel import run_tasks


def _scenes():
    return [
        Scene(
            (Source(x_arcmin=x, y_arcmin=-x / 2),),
            Pupil(icl=ICL(hole_mm=0.36, decentre_mm=(0.05 * x, 0))),
            Detector(n=64),
        )
        for x in (0.0, 1.0, 2.5, -3.0)
    ]


def test_pool_and_cluster_match_serial_bit_for_bit():
    scenes = _scenes()
    serial = run_tasks(render, scenes, quiet=True)
    pooled = run_tasks(render, scenes, workers=2, quiet=True)
    cluster = run_tasks(render, scenes, scheduler="local", workers=2, quiet=True)
    # Same bytes at the same index: the order is the task order, not the completion order.
    for a, b, c in zip(serial, pooled, cluster):
        assert a.scene.tobytes() == b.scene.tobytes() == c.scene.tobytes()
    assert len({r.scene.tobytes() for r in serial}) == len(scenes)
