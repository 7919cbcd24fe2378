"""The named mistakes of each assignment, one module per assignment (``conv_backward`` for
04_conv_backward): see ../diagnosis.py. Each module defines ``MISCONCEPTIONS``."""
