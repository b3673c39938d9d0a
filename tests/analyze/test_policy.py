"""The strategy policy: the fastest strategy per range of swept fragment sizes, per path."""

from kvbench.analyze.decide.policy import policies


def row(strategy, size, gbps, src="pinned", dst="device:0", spread=0.01, fragments=1000, model="m"):
    seconds = size * fragments / (gbps * 1e9)
    return {"bench": "kv.restore", "status": "ok", "case_hash": f"{strategy}{size}{src}{dst}{model}",
            "params": {"strategy": strategy, "src": src, "dst": dst, "model": model, "block_tokens": size // 1024},
            "gbps_median": gbps, "gbps_p10": gbps * (1 - spread), "gbps_p90": gbps * (1 + spread),
            "bytes_per_op": size * fragments, "median_s": seconds, "extra": {"fragment_bytes": size, "fragments": fragments}}


def test_the_crossover_splits_the_sizes_into_ranges_of_one_winner_each():
    rows = []
    for size, batch, kernel in ((2048, 5.0, 9.0), (8192, 14.0, 20.0), (32768, 40.0, 30.0), (131072, 50.0, 33.0)):
        rows += [row("gpu-batch", size, batch), row("gpu-kernel", size, kernel)]
    rows.append(row("gpu-contiguous", 2048, 55.0))  # a ceiling is never a way to move fragments
    found = policies(rows)
    assert [(p.fragment_bytes, p.strategy, p.gbps) for p in found] == [
        ((2048, 8192), "gpu-kernel", 9.0), ((32768, 131072), "gpu-batch", 40.0)]
    assert all(p.path == "pinned → device" and p.tie_with is None for p in found)
    assert found[1].alpha_us is not None  # fitted from the strategy's sweep on this path


def test_two_strategies_within_noise_are_said_to_be():
    rows = [row("host", 4096, 10.0, "pageable", "pageable", spread=0.05),
            row("host-numpy", 4096, 9.8, "pageable", "pageable", spread=0.05)]
    (only,) = policies(rows)
    assert only.strategy == "host" and only.tie_with == "host-numpy" and only.fragment_bytes == (4096, 4096)


def test_each_path_has_its_own_policy():
    rows = [row("host", 4096, 10.0, "pageable", "pageable"), row("gpu-batch", 4096, 20.0)]
    assert sorted(p.path for p in policies(rows)) == ["pageable → pageable", "pinned → device"]


def test_a_range_is_said_to_be_within_noise_only_where_it_is_at_every_size():
    rows = [row("host", 2048, 4.0, "pageable", "pageable"), row("host-numpy", 2048, 2.0, "pageable", "pageable"),
            row("host", 8192, 6.0, "pageable", "pageable", spread=0.05),
            row("host-numpy", 8192, 5.9, "pageable", "pageable", spread=0.05)]
    found = policies(rows)
    assert [(p.fragment_bytes, p.strategy, p.tie_with) for p in found] == [
        ((2048, 2048), "host", None), ((8192, 8192), "host", "host-numpy")]
