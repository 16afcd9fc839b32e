"""The driver's control plane: the job seam and (later) its HTTP API."""
