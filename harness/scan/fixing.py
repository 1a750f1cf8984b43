"""``scan --fix``: rewrite a user's model into the workaround forms the evidence favours on the chosen targets.

Per finding and target, :func:`choose` ranks the case's workaround variants by their evidence there (observed pass,
then claimed pass; or takes the user's ``--workaround`` choice), skipping those that fail or are unverified and those
the case cannot rewrite, and says why. Targets that end up with the same choices form a group; each group with
something to fix gets one fixed model. :func:`fix_model` applies, at every place of a finding, the first of its
workarounds the case's ``fix`` can rewrite there, and :mod:`harness.scan.fix_checks` checks the result. A place
where none of them can be rewritten is left as it is and listed with the reason (:class:`PlaceNotFixed`): the rest
is written and checked, and the fix is partial. When a group's fixed model makes a verdict worse on some of its
targets only, those targets leave the group and keep the model as it is (their places listed with the check), and
the fixed model is checked again for the others. When it still fails a check, the places whose rewrite made it fail
are found by bisection (:mod:`harness.scan.fix_isolation`) and left as they are, listed with the check's figures;
the rest is rewritten and checked again, and the fix is partial.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from onnx import external_data_helper

from cases import rewriting
from cases.model import AlreadyInForm, FixTolerance, Match, NoRewrite, Variant, get_case
from harness.exit_codes import EXIT_BROKEN, EXIT_OK, EXIT_PARTIAL, EXIT_REGRESSION, EXIT_USAGE
from harness.scan.fix_places import FixFailed, PlaceFix, PlaceNotFixed
from harness.scan.matching import Finding
from harness import judgement as j

GOOD = j.SCAN_GOOD
STAGING_DIR = ".fix-staging"


class WorkaroundChoiceError(ValueError):
    """A --workaround CASE=VARIANT that names no case of the library or none of its workaround variants."""


def workaround_choices(pairs: Sequence[str]) -> dict[str, list[str]]:
    """--workaround CASE=VARIANT pairs, each naming a case of the library and one of its workaround variants; several
    for one case are tried in the order given at each place. WorkaroundChoiceError names a pair that does not."""
    import cases  # noqa: F401  (registers the library)

    chosen: dict[str, list[str]] = {}
    for pair in pairs:
        case_id, _, name = pair.partition("=")
        try:
            case = get_case(case_id)
        except KeyError as err:
            raise WorkaroundChoiceError(f"--workaround {pair}: {err.args[0]}") from None
        workarounds = [v.name for v in case.variants if v.role == j.WORKAROUND_ROLE]
        if name not in workarounds:
            raise WorkaroundChoiceError(f"--workaround {pair}: {case_id} has no workaround variant {name!r}; its "
                                        f"workarounds: {', '.join(workarounds) or '(none)'}")
        chosen.setdefault(case_id, []).append(name)
    return chosen


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A workaround variant --fix may apply for a finding on a target, and why it may."""

    workaround: Variant
    basis: str  # the basis of its verdict (judgement.BASES), or "your choice" (--workaround)
    reason: str
    evidence: tuple[str, ...] = ()  # the workaround's evidence on the target, one sentence each


@dataclasses.dataclass(frozen=True)
class Choice:
    """What --fix does about one finding on one target: the workarounds to try at each place, best first (the first
    that the case can rewrite at a place is applied there), or none and why."""

    candidates: tuple[Candidate, ...]
    reason: str = ""  # why none, when there are none
    refused: bool = False  # the user's --workaround for this case cannot be applied to its form at all

    @property
    def key(self) -> tuple[str, ...]:
        return tuple(c.workaround.name for c in self.candidates)


def choose(finding: Finding, verdict: Any, overrides: dict[str, list[str]],
           own_verdict: Callable[[Variant], Any] | None = None) -> Choice:
    """The workarounds for ``finding`` on the target of ``verdict`` (a prediction ``Verdict``). With ``own_verdict``
    (--to-explicit: the Q/DQ placement is ours, not the user's), a failing form also gets the case's workarounds
    that nothing is known against on the target (``own_verdict(workaround)``: the prediction of the workaround form
    itself), after those known to pass; where the form itself is expected to build as asked (likely, verified) it
    is left alone, as by --fix: a workaround nothing is known of would trade that for the unknown (S3's workaround
    runs a depthwise conv FP32 where its Q/DQ form is predicted INT8)."""
    case, form = finding.case, finding.variant
    if form is not None and form.role == j.WORKAROUND_ROLE:
        return Choice((), f"already in the workaround form {form.name}")
    if case.id in overrides:
        chosen, problems = [], []
        for name in overrides[case.id]:
            problem = case.rewrite_problem(case.variant(name), form)
            if problem:
                problems.append(f"your --workaround {name} cannot be applied: {problem}")
            else:
                chosen.append(Candidate(case.variant(name), "your choice", f"{name}: your choice (--workaround), "
                                        "whatever the evidence says"))
        return Choice(tuple(chosen), "; ".join(problems), refused=not chosen)
    if verdict.verdict in j.SCAN_NOTHING_TO_FIX:
        return Choice((), f"nothing to fix: {verdict.verdict} here")
    # a sweep that keeps the failing form's structure (other sizes, scales) is that form for the migration too: the
    # nearest variant's channel count does not decide which of a model's depthwise convs keep S3's form
    migrating = own_verdict is not None and form is not None and (form.role == j.FAILING_ROLE or form.inherits)
    if verdict.verdict == j.UNAVAILABLE:
        return Choice((), "the target is unavailable")
    reasons, ranked = [], []
    checks = [(check.variant, check.verdict, check.evidence) for check in verdict.workarounds]
    if migrating:  # every workaround form of the case, with what is known of that form itself on the target
        known = {check.variant.name for check in verdict.workarounds}
        checks += [(variant, own.verdict, own.evidence) for variant in case.variants
                   if variant.role == j.WORKAROUND_ROLE and variant.name not in known
                   for own in [own_verdict(variant)]]
    for variant, verdict_there, evidence in checks:
        if verdict_there not in GOOD and not (migrating and verdict_there == j.UNVERIFIED):
            reasons.append(f"{variant.name} is {verdict_there} here")
            continue
        problem = case.rewrite_problem(variant, form)
        if problem:
            reasons.append(f"{variant.name}: {problem}")
            continue
        basis = j.judge(evidence).basis if verdict_there in GOOD else \
            "the library's workaround form, placed by --to-explicit"
        candidate = Candidate(variant, basis, f"{variant.name} ({verdict_there}, {basis})",
                              tuple(e.describe() for e in evidence))
        ranked.append((j.fix_rank(verdict_there, basis), len(ranked), candidate))
    if migrating:
        if not ranked and not reasons:
            reasons.append(f"{case.id} has no workaround form in the library")
    elif not verdict.workarounds:
        reasons.append(f"no workaround of {case.id} is known to pass here")
    return Choice(tuple(c for _, _, c in sorted(ranked, key=lambda item: item[:2])), "; ".join(reasons))


@dataclasses.dataclass
class Group:
    """Targets that get the same fixed model: per finding (by index), the choice they share."""

    targets: list[str]
    choices: dict[int, Choice]  # finding index -> choice (one per finding)
    reasons: dict[int, dict[str, list[str]]] = dataclasses.field(default_factory=dict)  # why not: reason -> targets

    def why_not(self, index: int) -> str:
        """Why the finding is left as it is, per target when the targets' reasons differ."""
        reasons = self.reasons.get(index, {})
        if len(reasons) == 1:
            return next(iter(reasons))
        return "; ".join(f"on {', '.join(targets)}: {reason}" for reason, targets in reasons.items())

    @property
    def fixes(self) -> dict[int, Choice]:
        return {i: c for i, c in self.choices.items() if c.candidates}

    def split_off(self, targets: Sequence[str]) -> Group:
        """Take ``targets`` out of this group into a group of their own with the same choices (the fix makes them
        worse: they keep the model as it is, while the rest of the group is checked again without them)."""
        leaving = set(targets)
        split = Group([t for t in self.targets if t in leaving], dict(self.choices), {
            i: {reason: kept for reason, named in why.items() if (kept := [t for t in named if t in leaving])}
            for i, why in self.reasons.items()})
        self.targets = [t for t in self.targets if t not in leaving]
        self.reasons = {i: {reason: kept for reason, named in why.items()
                            if (kept := [t for t in named if t not in leaving])} for i, why in self.reasons.items()}
        return split


def group_targets(findings: Sequence[Finding], verdicts: Sequence[dict[str, Any]], targets: Sequence[Any],
                  overrides: dict[str, list[str]], own_verdict: Callable[[Finding, Variant, Any], Any] | None = None
                  ) -> tuple[list[Group], dict[str, str]]:
    """Groups of available targets with the same choices, in target order, and the unavailable targets (id -> why
    they get no model). ``own_verdict(finding, workaround, target)``: see :func:`choose`."""
    groups: dict[tuple, Group] = {}
    skipped = {}
    for target in targets:
        if not target.available:
            skipped[target.id] = f"unavailable: {target.reason}"
            continue
        choices = {i: choose(f, verdicts[i][target.id], overrides, None if own_verdict is None else
                             functools.partial(own_verdict, f, target=target)) for i, f in enumerate(findings)}
        key = tuple((i, c.key) for i, c in choices.items())
        group = groups.setdefault(key, Group([], choices))
        group.targets.append(target.id)
        for i, choice in choices.items():
            if choice.reason:
                group.reasons.setdefault(i, {}).setdefault(choice.reason, []).append(target.id)
        for i, choice in choices.items():  # a group's evidence lines: those of every target of it
            if choice is not group.choices[i]:
                merged = tuple(dataclasses.replace(mine, evidence=tuple(dict.fromkeys(mine.evidence + theirs.evidence)))
                               for mine, theirs in zip(group.choices[i].candidates, choice.candidates))
                group.choices[i] = dataclasses.replace(group.choices[i], candidates=merged)
    return list(groups.values()), skipped


def rewrite(loaded: Any, findings: Sequence[Finding], group: Group,
            in_place: bool) -> tuple[Any, Any, list[PlaceFix], list[PlaceNotFixed]]:
    """The loaded model (a copy of its graph, or with ``in_place`` the graph itself: copying 50k nodes costs as much
    as importing them) with the group's workarounds applied at every place of their findings: the rewritten graph,
    the onnx.ModelProto exported from it, the places done and the places none of the workarounds could be rewritten
    into (left as they are: a case raises NoRewrite before it changes anything)."""
    graph = loaded.graph if in_place else loaded.graph.copy()
    done, left = [], []
    for index, choice in group.fixes.items():
        finding = findings[index]
        for occurrence in finding.occurrences:
            match = _match(finding, occurrence)
            problems, already = [], []
            for candidate in choice.candidates:
                try:
                    result = finding.case.fix(graph, match, candidate.workaround)
                except NoRewrite as err:
                    problems.append(f"{candidate.workaround.name}: {err}")
                    if isinstance(err, AlreadyInForm):
                        already.append(problems[-1])
                    continue
                done.append(PlaceFix(finding, occurrence, candidate.workaround, result))
                break
            else:
                if already:
                    left.append(PlaceNotFixed(finding, occurrence, "already in the workaround form, nothing to "
                                              "rewrite: " + "; ".join(already), already=True))
                else:
                    left.append(PlaceNotFixed(finding, occurrence, "no workaround applies here: "
                                              + "; ".join(problems)))
    return graph, exported(graph, loaded.model), done, left


def rewrite_places(graph: Any, places: Sequence[PlaceFix],
                   original: Any) -> tuple[Any, Any, list[PlaceFix], list[PlaceNotFixed]]:
    """``graph`` (a copy of the original's) with just ``places`` rewritten again, each into the workaround
    :func:`rewrite` chose there: the graph, the onnx.ModelProto exported from it (its metadata from ``original``),
    the places done and those whose workaround no longer applies without the others."""
    done, left = [], []
    for place in places:
        try:
            result = place.finding.case.fix(graph, _match(place.finding, place.occurrence), place.workaround)
        except NoRewrite as err:
            left.append(PlaceNotFixed(place.finding, place.occurrence, f"{place.workaround.name}: {err}"))
            continue
        done.append(dataclasses.replace(place, result=result))
    return graph, exported(graph, original), done, left


def _match(finding: Finding, occurrence: Any) -> Match:
    return Match(finding.case.id, occurrence.nodes, finding.variant.name if finding.variant else None,
                 occurrence.note)


def exported(graph: Any, original: Any) -> Any:
    """The rewritten ``graph`` as an onnx.ModelProto with the ``original`` model's IR version, producer, opsets and
    metadata."""
    import onnx_graphsurgeon as gs

    rewriting.drop_removed(graph)
    rewriting.in_data_flow_order(graph)
    model = gs.export_onnx(graph, do_type_check=False)
    model.ir_version = original.ir_version
    model.producer_name, model.producer_version = original.producer_name, original.producer_version
    model.domain, model.model_version, model.doc_string = original.domain, original.model_version, original.doc_string
    del model.opset_import[:]
    model.opset_import.extend(original.opset_import)
    model.metadata_props.extend(original.metadata_props)
    return model


def tolerance_of(places: Sequence[PlaceFix]) -> FixTolerance | None:
    """The tolerance the fixed model's original outputs are held to: bit-equal when every rewrite declares it, else
    the loosest tolerance a rewrite of it declares."""
    declared = [p.result.tolerance for p in places if p.result.tolerance is not None]
    if not declared:
        return None
    return FixTolerance(min(t.min_cosine for t in declared), max(t.max_relative_error for t in declared),
                        "; ".join(dict.fromkeys(t.reason for t in declared)))


@dataclasses.dataclass
class GroupResult:
    """One group's fixed model, its places, its checks and the scan of the fixed model."""

    group: Group
    name: str | None  # the fixed model's file name; None when the group has nothing to fix
    places: list[PlaceFix] = dataclasses.field(default_factory=list)
    left: list[PlaceNotFixed] = dataclasses.field(default_factory=list)  # places none of the workarounds applies to,
    # and places already in a workaround's form (PlaceNotFixed.already)
    checks: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    rescan: Any = None  # the ScanResult of the fixed model
    rewrite_seconds: float = 0.0  # rewriting, exporting and saving the fixed model
    files: list[str] = dataclasses.field(default_factory=list)  # the fixed model's file, and its weights' file
    staged: Path | None = None  # the folder the checked files wait in until every group is done

    def to_dict(self, findings: Sequence[Finding]) -> dict[str, Any]:
        not_fixed = [{"finding": findings[i].label, "reason": self.group.why_not(i)} for i, c in
                     self.group.choices.items() if not c.candidates] + [p.to_dict() for p in self.left
                                                                        if not p.already]
        fixes = [{"finding": findings[i].label, "passed_over": self.group.why_not(i) or None,
                  "workarounds": [{"workaround": w.workaround.name, "basis": w.basis, "reason": w.reason,
                                   "evidence": list(w.evidence)} for w in c.candidates]}
                 for i, c in self.group.fixes.items()]
        weights = self.files[1] if len(self.files) > 1 else None
        return {"targets": self.group.targets, "model": self.name, "weights_file": weights, "fixes": fixes,
                "not_fixed": not_fixed, "already_in_form": [p.to_dict() for p in self.left if p.already],
                "places": [p.to_dict() for p in self.places], "checks": self.checks,
                "verdicts": [v.to_dict() for v in self.rescan.model_verdicts] if self.rescan else None,
                "build_time": list(dict.fromkeys(p.result.build_time for p in self.places if p.result.build_time)),
                "rewrite_seconds": round(self.rewrite_seconds, 3)}


@dataclasses.dataclass
class FixOutcome:
    """Everything --fix did: per group its result, and the failure that stopped it (nothing written), if any."""

    groups: list[GroupResult]
    skipped_targets: dict[str, str]
    inputs: dict[str, Any]  # how the comparison inputs were made (file, or draws and their seed)
    failure: FixFailed | None = None

    @property
    def status(self) -> str:
        """failed (a --workaround that cannot apply: nothing written), partial (some places left with their
        reasons, the rest written), fixed, or nothing-to-fix."""
        if self.failure is not None:
            return "failed"
        if any(not place.already for g in self.groups for place in g.left):
            return "partial"
        return "fixed" if any(g.name for g in self.groups) else "nothing-to-fix"

    @property
    def written(self) -> list[str]:
        """The file names of the fixed models written into the output directory."""
        return [] if self.failure is not None else [g.name for g in self.groups if g.name]

    def exit_status(self, result: Any) -> int:
        """The exit status after --fix (harness.exit_codes): usage when a --workaround cannot apply (nothing
        written); broken when evidence was damaged; partial when some place could not be fixed or its rewrite failed
        a check; else the scan's rule on the fixed models (each group's targets judged on its fixed model, the
        others on the original)."""
        if self.failure is not None:
            return EXIT_USAGE
        damaged = result.evidence_damaged
        failing = False
        original = set(result.failing_targets)
        for group in self.groups:
            if group.rescan is None:
                failing |= bool(original & set(group.group.targets))
            else:
                damaged |= group.rescan.evidence_damaged
                failing |= bool(group.rescan.failing_targets)
        if damaged:
            return EXIT_BROKEN
        if self.status == "partial":
            return EXIT_PARTIAL
        return EXIT_REGRESSION if failing else EXIT_OK

    def to_dict(self, findings: Sequence[Finding]) -> dict[str, Any]:
        failure = self.failure
        return {"status": self.status, "inputs": self.inputs, "skipped_targets": self.skipped_targets,
                "failure": {"place": failure.place, "check": failure.check, "message": failure.message}
                if failure else None,
                "groups": [g.to_dict(findings) for g in self.groups]}


def model_names(groups: Sequence[Group]) -> list[str | None]:
    """The fixed model's file name of each group: ``fixed.onnx`` when one group has fixes, else ``fixed-N.onnx``."""
    fixing = [g for g in groups if g.fixes]
    names, count = [], 0
    for group in groups:
        if not group.fixes:
            names.append(None)
            continue
        count += 1
        names.append("fixed.onnx" if len(fixing) == 1 else f"fixed-{count}.onnx")
    return names


def fix_model(result: Any, overrides: dict[str, list[str]], inputs: Any, out_dir: Path,
              rescan: Callable[[Path, list[str], Any], Any], progress: Callable[[str], None],
              migrating: bool = False) -> FixOutcome:
    """Fix the model of the scan ``result``: choose per target, group, rewrite, check, and write the fixed models
    into ``out_dir``. A place none of its workarounds applies to stays as it is, listed with its reason; when a
    group's fixed model fails a check, the places whose rewrite made it fail are found (:mod:`fix_isolation`) and
    left as they are, listed with the check's figures, and the rest is rewritten and checked again; a group none of
    whose places is left rewritten gets no model. Only a --workaround that cannot apply to its case's form fails the
    fix, and then nothing is written. ``inputs`` (fix_checks.ComparisonInputs) feeds the ONNX Runtime comparison;
    ``rescan(path, target ids, graph)`` scans a fixed model (checking the file, matching the rewritten graph it was
    exported from: importing the file again would cost as much as the first import).
    ``migrating`` (--to-explicit): failing forms also get workarounds nothing is known against (see :func:`choose`).
    """
    from harness.scan import fix_checks

    own_verdict = functools.partial(_own_verdict, result.observations) if migrating else None
    groups, skipped = group_targets(result.findings, result.verdicts, result.options.targets, overrides, own_verdict)
    outcome = FixOutcome([], skipped, inputs.describe())
    original = fix_checks.Original.of(result.loaded, inputs)
    names = model_names(groups)
    if any(names):
        original.start_reference()
        if result.loaded.external_data:  # the rewrites may read weights: read them all, once
            external_data_helper.load_external_data_for_model(result.loaded.model, os.fspath(result.loaded.base_dir))
    last = max((i for i, name in enumerate(names) if name), default=-1)
    staging = Path(out_dir) / STAGING_DIR
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for index, (group, name) in enumerate(zip(groups, names)):
            group_result = GroupResult(group, name)
            outcome.groups.append(group_result)
            for finding_index, choice in group.choices.items():
                if choice.refused:
                    finding = result.findings[finding_index]
                    raise FixFailed(finding.occurrences[0].anchor, "rewrite", f"{finding.label}: {choice.reason}")
            if name is None:
                continue
            started = time.perf_counter()
            in_place = index == last
            graph, model, places, group_result.left = rewrite(result.loaded, result.findings, group, in_place)
            for place in group_result.left:
                state = "left as it is" if place.already else "not fixed"
                progress(f"{state} for {', '.join(group.targets)}: {place.occurrence.anchor}: {place.reason}")
            if not places:
                group_result.name = None  # nothing could be rewritten: the model as it is
                continue
            attempt = _Attempts(result, original, inputs, staging / str(index), group_result, rescan)
            progress(f"checking {name} for {', '.join(group.targets)}")
            failure = attempt(graph, model, places, started)
            while failure is not None and failure.targets and set(failure.targets) < set(group.targets):
                dropped = [PlaceNotFixed.dropped(place, failure) for place in places]
                outcome.groups.append(GroupResult(group.split_off(failure.targets), None,
                                                  left=[*group_result.left, *dropped]))
                progress(f"{name} makes a verdict worse on {', '.join(failure.targets)} ({failure.detail}): they keep "
                         f"the model as it is; checking {name} again for {', '.join(group.targets)}")
                failure = attempt(graph, model, places)
            if failure is not None:
                _isolate(result, group_result, places, failure, in_place, attempt, progress)
        for group_result in outcome.groups:
            for file_name in group_result.files:
                (group_result.staged / file_name).replace(Path(out_dir) / file_name)
    except FixFailed as err:
        outcome.failure = err
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return outcome


@dataclasses.dataclass
class _Attempts:
    """Stages and checks a group's fixed models, each in a folder of its own under ``folder``; the last that passes
    every check is the group's (its places, checks, scan and files go to ``group_result``)."""

    result: Any
    original: Any  # fix_checks.Original
    inputs: Any  # fix_checks.ComparisonInputs
    folder: Path
    group_result: GroupResult
    rescan: Callable[[Path, list[str], Any], Any]  # see fix_model
    count: int = 0

    def __call__(self, graph: Any, model: Any, places: list[PlaceFix], started: float | None = None
                 ) -> FixFailed | None:
        """Save and check one fixed model (``started``: when its rewrite began, for the first); None if it passes."""
        from harness.scan import fix_checks

        kept = self.group_result
        self.count += 1
        staged = self.folder / str(self.count) / kept.name
        staged.parent.mkdir(parents=True)
        files = fix_checks.save(model, staged, bool(self.result.loaded.external_data))
        if started is not None:
            kept.rewrite_seconds = time.perf_counter() - started
        try:
            fixed, checks = fix_checks.check_fixed(
                self.result, self.original, staged, places, tolerance_of(places), self.inputs,
                lambda path: self.rescan(path, kept.group.targets, graph))
        except FixFailed as failed:
            return failed
        kept.places, kept.files, kept.staged, kept.rescan, kept.checks = places, files, staged.parent, fixed, checks
        return None


def _isolate(result: Any, group_result: GroupResult, places: list[PlaceFix], failure: FixFailed, in_place: bool,
             attempt: _Attempts, progress: Callable[[str], None]) -> None:
    """After the group's fixed model failed ``failure``'s check: find the places whose rewrite made it fail
    (:func:`fix_isolation.isolate`, each subset rewritten on a fresh copy of the original graph and checked by
    ``attempt``), list them as not fixed with the check's figures, and keep the last set that passed."""
    from harness.scan.fix_isolation import isolate
    from harness.scan.loading import load_model

    name, targets = group_result.name, ", ".join(group_result.group.targets)
    progress(f"{name} fails the {failure.check} check: {failure.detail}; finding the place(s) of the "
             f"{len(places)} rewritten whose rewrite makes it fail")
    # the last group rewrote the scan's own graph: the original is imported again (only on this path)
    pristine = load_model(result.loaded.path).graph if in_place else result.loaded.graph

    def check(subset: list[PlaceFix]) -> FixFailed | None:
        graph, model, done, left = rewrite_places(pristine.copy(), subset, result.loaded.model)
        if left:
            return FixFailed(left[0].occurrence.anchor, "rewrite", left[0].reason)
        return attempt(graph, model, done)

    isolated = isolate(places, failure, check)
    for place, failed in isolated.dropped:
        not_fixed = PlaceNotFixed.dropped(place, failed)
        group_result.left.append(not_fixed)
        progress(f"not fixed for {targets}: {place.occurrence.anchor}: {not_fixed.reason}")
    progress(f"{len(isolated.dropped)} of {len(places)} place(s) dropped after {isolated.checks + 1} check(s) of "
             f"{name}; " + (f"the other {len(isolated.kept)} pass every check" if isolated.kept else
                            "no place is left to rewrite: no model"))
    if not isolated.kept:
        group_result.name, group_result.places, group_result.files = None, [], []
        group_result.rescan, group_result.checks = None, []


def fix_scanned(result: Any, overrides: dict[str, list[str]], inputs: Any, out_dir: Path,
                progress: Callable[[str], None], migrating: bool = False) -> FixOutcome:
    """:func:`fix_model` on the scan ``result``, each fixed model scanned again with the scan's own options (no
    --run) on its group's targets. ``inputs``: fix_checks.ComparisonInputs (InputsError when they do not fit the
    model, before anything is rewritten)."""
    from harness.scan.loading import load_model
    from harness.scan.scanner import scan

    inputs.arrays(result.loaded.graph.inputs)
    progress(f"--fix: {inputs.text()}")
    options = result.options
    matrix = {t.id: t for t in options.targets}

    def rescan(path: Path, target_ids: list[str], graph: Any) -> Any:
        return scan(path, dataclasses.replace(options, targets=[matrix[t] for t in target_ids], run_targets=()),
                    loaded=load_model(path, graph))

    return fix_model(result, overrides, inputs, out_dir, rescan, progress, migrating=migrating)


def _own_verdict(observations: Any, finding: Finding, workaround: Variant, target: Any) -> Any:
    """The prediction for ``finding``'s places in ``workaround``'s form on ``target``."""
    from harness.scan.prediction import predict

    return predict(Finding(finding.case, workaround, finding.occurrences), target, observations)
