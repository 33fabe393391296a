"""The checker against compilers on a fixed sample of the differential fuzzer (issue 29).

A seeded run of holefill.bench.fuzz per language (the full runs are
benchmarks/fuzz_differential.py): token-level mutations of real files checked whole, and 1-3
hole cuts whose witnesses must compile, whose real middles must be accepted (when they keep the
reading of the text around them) and whose proposals must agree with the oracle. The oracles
are CPython's parser (3.12 judges, see the fuzz module's policy) and gcc/g++ -fsyntax-only;
our grammar never judges itself.

Every class of probe must show 0 false YES, 0 false NO and 0 invalid witnesses, except the
(class, kind of failure) pairs listed in KNOWN, each of which has an xfail(strict=True) test
of its own: it turns into a failure the moment that class is fixed (then remove it from
KNOWN), and a new failing class or kind fails the main test.
"""

from __future__ import annotations

import shutil

import pytest

from holefill.bench.fuzz import Report, run_language
from holefill.bench.oracles_syntax import PYTHON_VERSIONS

# language -> (cuts, files, longest file in lines, seed): each run well under a minute alone
SAMPLES = {"python": (150, 60, 120, 0), "cpp": (50, 40, 300, 0), "c": (40, None, 1000, 0)}

# (language, class, kind) -> what fails there today (examples: fuzz_differential.py --out)
KNOWN: dict[tuple[str, str, str], str] = {
    ("cpp", "mutate:splice", "false_no"):
        "a backslash-newline inside a token (`std::vec\\` newline `tor`) is refused",
    ("c", "mutate:splice", "false_no"):
        "a backslash-newline inside a word (`self->cap\\` newline `acity`) is refused",
}

_reports: dict[str, Report] = {}


def report(language: str) -> Report:
    if language not in _reports:
        if language == "python" and not PYTHON_VERSIONS["3.12"].exists():
            pytest.skip("CPython 3.12 (pyenv) is the judge of Python syntax")
        if language != "python" and shutil.which("g++" if language == "cpp" else "gcc") is None:
            pytest.skip("no compiler to judge with")
        cuts, files, max_lines, seed = SAMPLES[language]
        _reports[language] = run_language(language, cuts, seed, files=files,
                                          max_lines=max_lines, minimize_calls=0)
    return _reports[language]


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_checker_agrees_with_the_compilers_outside_the_known_classes(language):
    rep = report(language)
    assert rep.cuts == SAMPLES[language][0]
    checked = sum(r.cases - r.unsure for r in rep.rows.values())
    assert checked >= rep.cuts  # the oracle decided most probes (not all "unsure")
    unexpected = {key: n for key, n in rep.failure_kinds().items()
                  if (language, *key) not in KNOWN}
    assert unexpected == {}, {key: rep.examples[key[0]][key[1]] for key in unexpected}


@pytest.mark.parametrize(("language", "cls", "kind"), [
    pytest.param(*key, marks=pytest.mark.xfail(strict=True, reason=why))
    for key, why in sorted(KNOWN.items())
])
def test_no_failures_in_a_known_failing_class(language, cls, kind):
    rep = report(language)
    assert rep.failure_kinds().get((cls, kind), 0) == 0, rep.examples.get(cls, {}).get(kind)
