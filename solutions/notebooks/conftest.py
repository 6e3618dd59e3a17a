"""nbval runs these instructor notebooks in CI: an exercise check that does not pass must fail the run.

The notebooks' kernels inherit this environment, and course/exercises.py raises in strict mode.
"""

import os

os.environ.setdefault("COURSE_STRICT_EXERCISES", "1")
