"""app layer (see DESIGN.md): the clinician's PySide6 desktop app.

- :mod:`visiontune.app.main_window`: start screen, session view, finish view; keys; worker thread.
- :mod:`visiontune.app.worker`: the thread owning the trial log and the session (refit and
  next query off the GUI thread).
- :mod:`visiontune.app.keys`: key -> command (pure). :mod:`visiontune.app.simulation`: the
  simulated patient of demo mode. :mod:`visiontune.app.settings`: persisted settings (TOML).
- :mod:`visiontune.app.plots`: pyqtgraph live plots. :mod:`visiontune.app.logs`: log file,
  one error dialog, the exception hook. :mod:`visiontune.app.cli`: ``visiontune app``.

Importing this package imports no Qt; import the submodules where they are used.
"""
