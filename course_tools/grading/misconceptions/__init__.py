"""The named mistakes of each assignment, one module per assignment (``conv_backward`` for
04_conv_backward): see ../diagnosis.py. Each module defines

    MISCONCEPTIONS  the mistakes: a wrong implementation written here from its idea, and an
                    explanation for the student that points into the notebook
    PROBES          inputs on which they show, for `course check` (../probes.py)
    NEEDS           {task: other tasks whose code the task's probes also run}, where there are any

_calls.py reads scenario calls back into inputs, and makes the probes' calls."""
