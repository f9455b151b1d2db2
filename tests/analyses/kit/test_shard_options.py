"""``--workers`` and ``--devices``: parsed and checked before anything loads."""

from __future__ import annotations

import argparse

import pytest

from bayesgeom.analyses.kit.shard_options import Sharded, check_workers, device_list


def test_a_device_list_is_read_and_a_malformed_one_refused():
    assert device_list("cpu") == ("cpu",)
    assert device_list("cuda:0,cuda:1, 2") == ("cuda:0", "cuda:1", "cuda:2")  # as sweep reads it
    for bad in ("cuda:0,,cuda:1", "gpu0", "cuda:x", "cuda:0;cuda:1", "", "cuda", "xpu:2"):
        with pytest.raises(argparse.ArgumentTypeError):
            device_list(bad)


@pytest.mark.parametrize("workers, devices, n, match", [
    (2, ("cuda:0",), 75, "names 1 device for 2 workers"),
    (1, ("cuda:0", "cuda:1"), 75, "names 2 devices for 1 worker"),
    (9, (), 8, "--workers 9 is more than the 8 prompts"),
    (2, ("cuda0", "cuda:1"), 75, "cuda0: give cpu, cuda:N or N"),
])
def test_workers_and_devices_that_do_not_fit_are_one_line(workers, devices, n, match):
    with pytest.raises(ValueError, match=match):
        check_workers(workers, devices, n, "prompts", ValueError)


def test_matching_workers_and_devices_pass():
    check_workers(2, ("cuda:0", "cuda:1"), 75, "prompts", ValueError)
    check_workers(3, (), 3, "prompts", ValueError)
    assert not Sharded().sharded and Sharded(workers=2).sharded
    assert Sharded(devices=("cpu",)).sharded
