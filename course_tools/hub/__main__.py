"""`make hub`: the course on a JupyterHub on localhost, with demo accounts, until Ctrl-C.

    sudo .venv/bin/python -m course_tools.hub [--root /srv/course-hub] [--assignment 04_conv_backward]

Builds the students' and graders' environments, creates the accounts of hub/roster.csv and the
grader account, starts the hub with hub/jupyterhub_config.py, releases an assignment, and prints
the address and the logins. Ctrl-C stops the hub and removes the accounts it made.
"""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from . import roster as rosters
from .accounts import AccountError
from .envs import EnvError
from .layout import DEFAULT_COURSE_ID, DEFAULT_ROOT, HubLayout
from .server import HubError
from .session import release, running_hub


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help=f"the deployment (default {DEFAULT_ROOT})")
    parser.add_argument("--course-id", default=DEFAULT_COURSE_ID)
    parser.add_argument("--roster", type=Path, default=rosters.DEFAULT)
    parser.add_argument("--assignment", default="04_conv_backward", help="released at the start")
    args = parser.parse_args(argv)
    layout = HubLayout(args.root.resolve(), args.course_id)
    roster = rosters.load(args.roster)
    # Ctrl-C and a plain `kill` both end in the clean-up of running_hub.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        with running_hub(layout, args.roster, say=lambda text: print(text, flush=True)) as hub:
            print(release(layout, args.assignment).strip(), flush=True)
            width = max(len(name) for name in roster.names())
            print(f"\nThe course {layout.course_id} is on {hub.url}/hub/login (the password of every account: "
                  f"{hub.password})\n")
            for person in roster.people:
                where = (f"formgrader: {hub.url}/services/{layout.course_id}/formgrader" if person.grades
                         else "the Assignments tab (Nbgrader menu)")
                print(f"  {person.username:<{width}}  {person.role:<10}  {where}")
            print(f"\nThe hub's log: {layout.log}. Ctrl-C stops the hub and removes these accounts.", flush=True)
            signal.pause()
    except KeyboardInterrupt:
        pass
    except (AccountError, EnvError, HubError, RuntimeError, rosters.RosterError) as err:
        print(f"course hub: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
