"""The Kubernetes end-to-end scenario's parts (``tests/e2e_k8s``), on the local control
plane or the cluster of the current kubeconfig.

- :mod:`.targets` — which cluster, and what it needs; :mod:`.cluster` — kubectl, helm,
  the API and killing containers; :mod:`.object_store` — the S3 server the cluster uses.
- :mod:`.k8s_job` — a CheckpointedJob's manifest and settings, and what the scenario
  records; :mod:`.job_view` — reading a job's pods and status;
  :mod:`.leftovers` — what must be gone after a job is deleted.
- :mod:`.scenario` — the scenario itself; :mod:`.installed` — the chart installed for it.
"""
