"""Lens devices: what puts each lens before the patient's eye (a layer below ``session/``).

:mod:`~visiontune.devices.base` (the interface, :class:`LensState`, ranges and steps, the
errors), :mod:`~visiontune.devices.manual` (the clinician's trial frame or phoropter, the
default), :mod:`~visiontune.devices.cv5000` (the Topcon CV-5000 over a serial port, after public
reverse-engineering notes: verify on your own device before clinical use),
:mod:`~visiontune.devices.emulator` (a SIMULATED CV-5000 on a pty), and
:func:`~visiontune.devices.choice.open_device` (a device from its setting: ``manual`` or
``cv5000:PORT``). docs/devices.md says what is documented and what is reverse-engineered.
"""
