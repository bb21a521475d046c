"""The app's Qt-free part: what the window shows and sends, decided without a widget.

- The controllers: :mod:`~visiontune.app.logic.session_controller` (the session page's phases,
  keys, finishing, the simulated patient's autopilot) and
  :mod:`~visiontune.app.logic.visit_flow_controller` (a visit's steps), each telling the window
  what to show through :mod:`~visiontune.app.logic.events` (kinds: :class:`~visiontune.app.logic.events.Shown`).
- The engine process: :mod:`~visiontune.app.logic.worker_process` (spawned),
  :mod:`~visiontune.app.logic.session_host` and :mod:`~visiontune.app.logic.visit_host` (its
  command executors), :mod:`~visiontune.app.logic.worker_device` (the lens device),
  :mod:`~visiontune.app.logic.visit_near_host` (the near addition).
- What crosses between them: :mod:`~visiontune.app.logic.messages` (the typed commands and
  events) carrying :mod:`~visiontune.app.logic.worker_values` (frozen values).
- Pure helpers: keys, texts, plot frames, the typed start form, visit steps and imports,
  settings, the simulated patient, a chart line's entry.

Nothing here imports PySide6 or pyqtgraph (tests/test_layers.py keeps this layer below the
widgets of :mod:`visiontune.app`); the engine process imports only this package's modules.
"""
