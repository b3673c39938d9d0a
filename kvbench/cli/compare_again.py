"""`compare --measure-again`: a drop judged on runs the box's neighbours contended is measured once more
before it gates (issue 37, "re-measure instead of refusing").

On a shared runner every run is contended, and a case's level under a neighbour moves by more than its
history can show: in one trial of the CI recipe beside a 2-process hog (docs/contention.md), identical
code went `slower` (−19.5 % on the fast end) once in 10 jobs, on a case whose 6 earlier runs had
agreed within ±1.9 %. Such a `slower` is measured again, now, into a run of its own (tagged
`remeasure_of`, never what `latest` names), and judged again with the new result in place of the first:
a real drop is there again and gates; a neighbour's burst is not. Only a stored run of this host can be
measured again; elsewhere the comparison stands as judged and standard error says why.

A drop the noise hid (`ambiguous`, beyond the threshold: never a PASS, issue 57 item 0) is measured once more
too: judged again on the new result, it may be `same` (the first was the box's) or still undecided.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

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
    from kvbench.analyze.regress.outcome import unseen_drops
    from kvbench.cli.accept_steps import measure_cases_again, suite_to_measure_again
    from kvbench.run.suite_run import RunRequest
    from kvbench.store.tags import REMEASURE_OF

    cases = contended_drops(comparisons, base_doc, new_doc)
    unseen = [c.case for c in unseen_drops(comparisons) if c.case not in cases]  # a drop the noise hid (issue 57 item 0)
    if not cases + unseen or (suite := suite_to_measure_again(new_doc, db, suite)) is None:
        return new_doc, comparisons
    said = [f"{len(cases)} case(s) slower while the box was contended"] if cases else []
    said += [f"{len(unseen)} case(s) with a drop within the noise (ambiguous)"] if unseen else []
    cases = cases + unseen
    err.print(f"kvbench: {' and '.join(said)}: measuring them once more", markup=False, highlight=False)
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
            how = "while contended, was slower" if was.verdict == "slower" else "was a drop within the noise"
            c = replace(c, note=f"{c.note}; measured again in run {redo['run']['id']}: the first measurement, "
                                f"{how}{change}")
        judged.append(c)
    return again, judged
