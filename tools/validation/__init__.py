"""The validation pages (docs/validation*.md) from the public measurements in ``validation/``:
``python -m tools.validation.validate [--write]``."""
