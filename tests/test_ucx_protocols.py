"""Reading UCX's protocol table: which transport and device a transfer used."""

from kvbench.backends.ucx_protocols import devices, parse

LOG = """\
[1.0] [vm:1:1]   +--------+-------------+-----------------------------------+
[1.0] [vm:1:1]   | kvbench-net-1-write self cfg#0                           |
[1.0] [vm:1:1]   | remote memory write by ucp_put* from host memory to host |
[1.0] [vm:1:1]   +--------+-------------+-----------------------------------+
[1.0] [vm:1:1]   | Range  | Description |              Config               |
[1.0] [vm:1:1]   +--------+-------------+-----------------------------------+
[1.0] [vm:1:1]   | 0..inf | zero-copy   | cma/memory                        |
[1.0] [vm:1:1]   +--------+-------------+-----------------------------------+
[1.1] [vm:1:1]   | kvbench-net-1-write self cfg#0                   |
[1.1] [vm:1:1]   | active message by ucp_am_send* from host memory |
[1.1] [vm:1:1]   |          0 | short              | tcp/lo        |
[1.2] [vm:1:1]   | kvbench-net-1-read intra-node cfg#1                           |
[1.2] [vm:1:1]   | remote memory read by ucp_get* into host memory from host     |
[1.2] [vm:1:1]   | 0..8191   | copy-out           | rc_mlx5/mlx5_0:1              |
[1.2] [vm:1:1]   | 8192..inf | zero-copy          | rc_mlx5/mlx5_0:1,rc_mlx5/mlx5_1:1 |
"""


def test_put_and_get_rows_are_kept_and_other_tables_are_not():
    protocols = parse(LOG.splitlines())
    assert protocols == {"write": ["0..inf zero-copy cma/memory"],
                         "read": ["0..8191 copy-out rc_mlx5/mlx5_0:1",
                                  "8192..inf zero-copy rc_mlx5/mlx5_0:1,rc_mlx5/mlx5_1:1"]}
    assert devices(protocols) == ["cma/memory", "rc_mlx5/mlx5_0:1", "rc_mlx5/mlx5_1:1"]  # the NIC ports used
