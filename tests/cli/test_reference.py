"""docs/cli.md is the CLI's own help, written out (kvbench/cli/reference.py): it cannot drift."""

from kvbench.cli.reference import DOC, reference


def test_the_reference_is_the_clis_help():
    assert DOC.read_text() == reference(), "run: python -m kvbench.cli.reference --write"


def test_every_command_and_option_is_in_the_reference():
    text = reference()
    for needle in ("## `kvbench run`", "## `kvbench host drift`", "## `kvbench crosscheck dram`",
                   "`--require-quiet`", "`--remeasure-s", "`--level"):
        assert needle in text, needle
