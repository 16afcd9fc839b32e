"""Value objects of the operator: the parsed spec, the status, what was observed.

Everything here is pure data: frozen dataclasses with symmetric ``from_storage`` /
``for_storage`` conversions to the camelCase JSON stored in the custom resource,
closed sets as enums, and duration parsing. No I/O, no kopf, no kubernetes.
"""
