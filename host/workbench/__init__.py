"""The training and evaluation workbench (`walkerlab workbench`, docs/workbench.md).

Non-widget logic, testable without Qt: ``catalog`` (recordings and their filters),
``params`` (settings forms from a recognizer's parameter constraints), ``runs``
(a leave-one-subject-out run, training into the model registry, report commands),
``tasks`` (background work with progress and Cancel). Widgets: one module per tab
(``evaluate_tab``, ``models_tab``, ``latent_view``, ``topics_view``, ``regimes_view``,
``hidden_states_view``), ``window`` composing them, and ``app`` (``run_workbench``).
"""
