"""tiered_agent: an async agent runtime with a tiered, measured context pipeline."""
