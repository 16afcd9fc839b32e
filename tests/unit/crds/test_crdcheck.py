"""The offline validator's own machinery, on small synthetic CRDs."""

from __future__ import annotations

import doctest
from typing import Any

import crdcheck
import crdcheck.manifest
import pytest
from celpy import celtypes

import cjob_operator.admission
import cjob_operator.admission.errors
from cjob_operator.admission import cel


def _crd(spec_schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.dev"},
        "spec": {
            "group": "example.dev",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": spec_schema},
                        }
                    },
                }
            ],
        },
    }


def _widget(spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": spec,
    }


@pytest.mark.parametrize(
    "module",
    [cjob_operator.admission, cjob_operator.admission.errors, crdcheck.manifest],
    ids=lambda m: m.__name__,
)
def test_doctests(module: Any) -> None:
    failures, attempted = doctest.testmod(module, raise_on_error=False)
    assert (failures, attempted > 0) == (0, True)


def test_unknown_fields_are_pruned_for_a_non_strict_client() -> None:
    validator = crdcheck.CustomResourceValidator(
        _crd({"type": "object", "properties": {"a": {"type": "integer"}}})
    )

    result = validator.validate_create(_widget({"a": 1, "b": 2}), strict=False)

    assert result.ok
    assert result.object["spec"] == {"a": 1}


def test_null_of_a_non_nullable_field_takes_the_default() -> None:
    validator = crdcheck.CustomResourceValidator(
        _crd({"type": "object", "properties": {"a": {"type": "integer", "default": 3}}})
    )

    assert validator.validate_create(_widget({"a": None})).object["spec"] == {"a": 3}


def test_nested_defaults_apply_only_below_a_present_or_defaulted_parent() -> None:
    inner = {"type": "object", "properties": {"x": {"type": "integer", "default": 1}}}
    validator = crdcheck.CustomResourceValidator(
        _crd({"type": "object", "properties": {"with": {**inner, "default": {}}, "without": inner}})
    )

    assert validator.validate_create(_widget({})).object["spec"] == {"with": {"x": 1}}


def test_a_rule_that_fails_to_evaluate_is_reported_with_the_rule() -> None:
    validator = crdcheck.CustomResourceValidator(
        _crd(
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.a > 1", "message": "a > 1"}],
            }
        )
    )

    [message] = validator.validate_create(_widget({})).messages

    assert message.startswith("spec: Invalid value: ")
    assert message.endswith(" evaluating rule: self.a > 1")


def test_a_rule_without_message_reports_the_rule() -> None:
    validator = crdcheck.CustomResourceValidator(
        _crd({"type": "integer", "x-kubernetes-validations": [{"rule": "self > 1"}]})
    )

    assert validator.validate_create(_widget(0)).messages == [
        "spec: Invalid value: 0: failed rule: self > 1"
    ]


def test_transition_rules_follow_list_map_items_by_key() -> None:
    item = {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "size": {"type": "integer"}},
        "x-kubernetes-validations": [
            {"rule": "self.size >= oldSelf.size", "message": "size must not shrink"}
        ],
    }
    validator = crdcheck.CustomResourceValidator(
        _crd(
            {
                "type": "object",
                "properties": {
                    "disks": {
                        "type": "array",
                        "items": item,
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                    }
                },
            }
        )
    )
    old = _widget({"disks": [{"name": "a", "size": 5}, {"name": "b", "size": 5}]})
    reordered = _widget(
        {"disks": [{"name": "b", "size": 9}, {"name": "a", "size": 4}, {"name": "c", "size": 1}]}
    )

    assert validator.validate_update(reordered, old).messages == [
        "spec.disks[1]: Invalid value: size must not shrink"
    ]


def test_numbers_are_doubles_and_integers_are_ints_in_cel() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "number"}, "i": {"type": "integer"}}}

    value = cel.to_cel({"n": 2, "i": 2}, schema)

    assert isinstance(value[celtypes.StringType("n")], celtypes.DoubleType)
    assert isinstance(value[celtypes.StringType("i")], celtypes.IntType)


def test_join_is_provided_for_message_expressions() -> None:
    result = cel.program("['a', 'b'].join(', ')").evaluate({})

    assert result == "a, b"
