"""Learning algorithms, one package each: a `Config`, pure `losses`, and (to come) the training loop."""
