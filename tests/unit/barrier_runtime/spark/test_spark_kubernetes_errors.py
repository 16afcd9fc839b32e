"""A refusal of the Kubernetes API inside Spark's start-up becomes one sentence."""

from __future__ import annotations

from barrier_runtime.spark import errors

# The shape of fabric8's exception text as py4j hands it over (Spark 4.3, fabric8 7.x).
JAVA = """An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.
: io.fabric8.kubernetes.client.KubernetesClientException: Failure executing: GET at: \
https://kubernetes.default.svc:6443/api/v1/namespaces/streaming/pods/wc-driver. \
Message: pods "wc-driver" is forbidden: User "system:serviceaccount:streaming:default" \
cannot get resource "pods" in API group "" in the namespace "streaming". Received status: \
Status(apiVersion=v1, code=403, details=StatusDetails(causes=[], group=null, kind=pods, \
name=wc-driver), kind=Status, reason=Forbidden, status=Failure).
\tat io.fabric8.kubernetes.client.dsl.internal.OperationSupport.requestFailure(...)
"""


def test_a_403_names_the_request_the_refusal_and_the_fix() -> None:
    refusal = errors.kubernetes_access_error(JAVA)
    assert isinstance(refusal, errors.SparkUnavailableError)
    assert str(refusal) == (
        "the Kubernetes API refused Spark's GET .../api/v1/namespaces/streaming/pods/wc-driver "
        '(403): pods "wc-driver" is forbidden: User "system:serviceaccount:streaming:default" '
        'cannot get resource "pods" in API group "" in the namespace "streaming"; the driver\'s '
        "service account needs the driver Role in its namespace (spec.driver.serviceAccount, "
        "or the chart's driver.namespaces listing that namespace)"
    )


def test_other_codes_carry_no_rbac_hint_and_other_errors_are_left_alone() -> None:
    not_found = JAVA.replace("code=403", "code=404")
    refusal = errors.kubernetes_access_error(not_found)
    assert refusal is not None and "(404)" in str(refusal) and "Role" not in str(refusal)
    assert errors.kubernetes_access_error("java.lang.OutOfMemoryError: Java heap space") is None
