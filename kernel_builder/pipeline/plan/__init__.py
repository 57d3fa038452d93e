"""Plan stage: which variants a build produces, their components, capabilities and op namespace id."""
