"""Data shipped with WalkerLab: the default recognizer (`default-model.npz`).

`scripts/train_default_model.py` regenerates the model deterministically from
simulated virtual-walker sessions; its header's metadata says how.
"""
