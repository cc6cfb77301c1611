"""SAC's hyper-parameters, declared once: the CLI and the docs are generated from this dataclass."""

from __future__ import annotations

import dataclasses

from hurtle.agents.config import check_positive
from hurtle.agents.offpolicy_config import OffPolicyConfig


@dataclasses.dataclass(frozen=True)
class Config(OffPolicyConfig):
    """Soft actor-critic hyper-parameters (beside `RunConfig`'s and the replay learners' shared ones).
    `validate()` checks them before anything is traced."""

    init_temperature: float = 1.0
    """The entropy temperature alpha at the start (it is learned)."""
    target_entropy: float | None = None
    """The entropy the temperature steers the policy towards; None: minus the action dimension (Haarnoja et al.)."""

    def validate(self) -> Config:
        """Raise ValueError naming the first field at fault; return self when all is well."""
        self.validate_replay()
        check_positive(self, "init_temperature")
        return self
