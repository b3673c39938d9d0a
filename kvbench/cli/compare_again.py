"""`compare --measure-again`: a drop judged on runs the box's neighbours contended is measured once more
before it gates (issue 37, "re-measure instead of refusing").

On a shared runner every run is contended, and a case's level under a neighbour moves by more than its
history can show: in one trial of the CI recipe beside a 2-process hog (docs/contention.md), identical
code went `slower` (−19.5 % on the fast end) once in 10 jobs, on a case whose 6 earlier runs had
agreed within ±1.9 %. Such a `slower` is measured again, now, into a run of its own (tagged
`remeasure_of`, never what `latest` names), and judged again with the new result in place of the first:
a real drop is there again and gates; a neighbour's burst is not. Only a stored run of this host can be
measured again; elsewhere the comparison stands as judged and standard error says why.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from kvbench.cli.common import err
from kvbench.errors import BadInput


def measure_contended_drops_again(base_doc: dict, new_doc: dict, comparisons: list[Any], db: str | None,
                                  judge_again: Callable[[dict], list[Any]], suite: str | None = None,
                                  quiet: bool = False) -> tuple[dict, list[Any]]:
    """(the new run's document, the comparisons): with each `slower` case that either run measured while
    contended measured once more (from `suite`, a name or TOML file, else the run's suite by name) and
    `judge_again` (the same comparison, given the new document) run on the document holding the new results;
    as given where there is none or the run cannot be measured here."""
    from kvbench.analyze.regress.contended import contended_drops, with_remeasured
    from kvbench.cli.accept_steps import measure_cases_again, suite_to_measure_again
    from kvbench.run.suite_run import RunRequest
    from kvbench.store.tags import REMEASURE_OF

    cases = contended_drops(comparisons, base_doc, new_doc)
    if not cases or (suite := suite_to_measure_again(new_doc, db, suite)) is None:
        return new_doc, comparisons
    err.print(f"kvbench: {len(cases)} case(s) slower while the box was contended: measuring them once more",
              markup=False, highlight=False)
    request = RunRequest(suite=suite, tags={"purpose": "compare", REMEASURE_OF: str(new_doc["run"]["id"])}, db=db,
                         cases=tuple(cases))
    try:
        redo = measure_cases_again(request, db, quiet)
    except BadInput as e:  # e.g. the run's cases were planned with --set: this suite alone no longer plans them
        err.print(f"kvbench: --measure-again: {e}; judged as stored", markup=False, highlight=False)
        return new_doc, comparisons
    again = with_remeasured(new_doc, redo)
    first = {c.case: c for c in comparisons}
    judged = []
    for c in judge_again(again):
        if c.case in cases:
            was = first[c.case]
            change = f" ({was.judged_change:+.1%} on the {was.estimator})" if was.judged_change is not None else ""
            c = replace(c, note=f"{c.note}; measured again in run {redo['run']['id']}: the first measurement, "
                                f"while contended, was slower{change}")
        judged.append(c)
    return again, judged
