"""The training and evaluation workbench (`walkerlab workbench`, docs/workbench.md).

Non-widget logic, testable without Qt: ``catalog`` (recordings and their filters),
``params`` (settings forms from a recognizer's parameter constraints), ``runs``
(a leave-one-subject-out run, training into the model registry, report commands).
Widgets: ``window`` (the Workbench window) and ``app`` (``run_workbench``).
"""
