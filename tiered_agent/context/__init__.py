"""Context management: the tiers that decide what the model sees."""
