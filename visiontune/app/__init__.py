"""app layer (docs/design.md, "Layers"): the clinician's PySide6 desktop app.

- :mod:`visiontune.app.logic`: everything of the app that holds no widget (no PySide6, no
  pyqtgraph): the controllers, the engine process and its typed messages
  (:mod:`visiontune.app.logic.messages`), the pure helpers below. The modules here beside it are
  the widgets and the Qt relay.
- :mod:`visiontune.app.main_window`: start screen, session view, finish view; it renders what
  :mod:`visiontune.app.logic.session_controller` (Qt-free: phases, keys, letters and comparisons,
  finishing, the simulated patient's autopilot) says. Visits: :mod:`visiontune.app.logic.visit_flow`
  and :mod:`visiontune.app.logic.visit_flow_controller` (Qt-free: steps, keys, the engine commands,
  the autopilot) rendered by :mod:`visiontune.app.visit_controller`.
- :mod:`visiontune.app.worker`: the GUI's side of the session engine (a Qt relay);
  :mod:`visiontune.app.logic.worker_process`: the spawned engine process;
  :mod:`visiontune.app.logic.session_host`: its command executor (trial log, session, refits);
  :mod:`visiontune.app.logic.worker_values`: the frozen values that cross the pipe.
- :mod:`visiontune.app.logic.plot_frames` and :mod:`visiontune.app.logic.texts` (Qt-free): the plot
  arrays and panel texts of an estimate, built in the engine process, ready to draw (the GUI thread spends a few
  milliseconds at most).
- :mod:`visiontune.app.logic.keys`: key -> command (pure). :mod:`visiontune.app.logic.simulation`: the
  simulated patient of demo mode. :mod:`visiontune.app.logic.settings`: persisted settings (TOML).
  :mod:`visiontune.app.logic.start_form`: the typed starting prescription, read and checked (pure).
- :mod:`visiontune.app.screenshots`: regenerates ``docs/screenshots/first-three-lenses-*.png``.
- :mod:`visiontune.app.plots`: pyqtgraph live plots, updated in place. :mod:`visiontune.app.logs`:
  log file, one error dialog, the exception hook. :mod:`visiontune.app.cli`: ``visiontune app``.

Importing this package imports no Qt; import the submodules where they are used.
"""
