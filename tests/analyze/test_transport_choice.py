"""Which transport wins where: read from transport=both cases' own paired ratios, never two medians."""

from kvbench.analyze.decide.transport_choice import transport_choices


def row(ratio, p10, p90, block=65536, transport="both", bench="net.write", **params):
    return {"bench": bench, "status": "ok", "case_hash": f"{bench}{block}{transport}{params}", "run_id": 7,
            "gbps_median": 1.0, "params": {"transport": transport, "block_size": block, "peer": "local", **params},
            "extra": {"paired": {"against": {"transport": "nixl"}, "median": ratio, "p10": p10, "p90": p90,
                                 "pairs": 9, "against_gbps": {"median": 1.0 / ratio}}}}


def test_a_transport_wins_only_where_the_whole_range_is_on_its_side():
    choices = transport_choices([row(1.4, 1.2, 1.6, 1 << 20), row(0.5, 0.4, 0.6, 1 << 16), row(1.0, 0.9, 1.1, 1 << 24)])
    assert [(c.size_bytes, c.winner) for c in choices] == [(1 << 16, "nixl"), (1 << 20, "mooncake"),
                                                            (1 << 24, "within noise")]
    assert choices[0].ratio == 0.5 and choices[0].pairs == 9 and choices[0].nixl_gbps == 2.0


def test_cases_that_measured_no_ratio_themselves_are_not_shown():
    alone = row(2.0, 1.9, 2.1, transport="mooncake")
    unpaired = {**row(2.0, 1.9, 2.1), "extra": {}}
    assert transport_choices([alone, unpaired]) == []


def test_a_launched_pair_is_named_by_its_hosts():
    (choice,) = transport_choices([row(1.2, 1.1, 1.3, peer="remote", src_host="n0", dst_host="n1")])
    assert choice.between == "n0 → n1"
