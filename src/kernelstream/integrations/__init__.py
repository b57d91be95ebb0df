"""Adapters to other libraries' interfaces: :mod:`kernelstream.integrations.river` (river's
online-learning API; needs the ``river`` extra)."""
