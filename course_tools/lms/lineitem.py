"""The assignment's grade column in the LMS: its AGS line item, found or made once, for the push's
final scores and the grading service's progress posts alike.

The one recorded in the ledger (checked with a GET: it still exists and is this assignment's),
else the platform's with ``resourceId`` = the assignment id, else a new one with the assignment's
maximum and its id as the label. Its id must be a URL on the platform (a line item id the
platform answers is where scores are posted: never anywhere it says).
"""
from __future__ import annotations

from .connector import AGS_SCOPES, Refused
from .ledger import Ledger
from .registration import LmsError, same_origin


def score_service(connector, reg):
    """PyLTI1p3's AGS service on the course's line items, with the scopes a push asks for."""
    from pylti1p3.assignments_grades import AssignmentsGradesService

    return AssignmentsGradesService(connector, {"scope": list(AGS_SCOPES), "lineitems": reg.lineitems_url})


def checked(item, reg, assignment: str) -> str:
    """The line item's id, after checking what the platform said of it."""
    lineitem, resource = item.get_id(), item.get_resource_id()
    if not isinstance(lineitem, str) or not same_origin(lineitem, reg.lineitems_url):
        raise LmsError(f"the platform's line item for {assignment} has the id {lineitem!r}, not a URL on the "
                       f"platform ({reg.lineitems_url}): not used")
    if resource not in (None, assignment):
        raise LmsError(f"the platform's line item {lineitem} is for {resource!r}, not {assignment}: not used")
    return lineitem


def find_lineitem(connector, ledger: Ledger, reg, assignment: str, maximum: float) -> tuple[str, list[str]]:
    """The assignment's line item (its id) and what to tell the instructor about it."""
    from pylti1p3.lineitem import LineItem

    service = score_service(connector, reg)
    recorded, item = ledger.lineitem(assignment), None
    if recorded:
        try:
            item = service.get_lineitem(recorded["lineitem"])
        except Refused as err:
            if err.status not in (404, 410):
                raise
    if item is None:   # none recorded, or deleted in the LMS: the platform's for this resourceId, else a new one
        new = LineItem().set_resource_id(assignment).set_label(assignment).set_score_maximum(maximum)
        item = service.find_or_create_lineitem(new, find_by="resource_id")
    lineitem = checked(item, reg, assignment)
    if not recorded or recorded["lineitem"] != lineitem:
        ledger.put_lineitem(assignment, lineitem, maximum)
    theirs = item.get_score_maximum()
    notes = []
    if isinstance(theirs, (int, float)) and abs(theirs - maximum) > 1e-9:
        notes.append(f"the LMS's grade column for {assignment} is out of {theirs:g}, the assignment of {maximum:g}: "
                     f"each score says its maximum ({maximum:g}) and the LMS scales it")
    return lineitem, notes
