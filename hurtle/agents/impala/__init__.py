"""IMPALA (V-trace) on Sebulba: host environments on actor threads, the learner on its own devices."""
