"""Cinder's database layer: the models and the queries both services run."""
