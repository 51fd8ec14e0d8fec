"""Collections: field selection, querying, pagination, aggregation, computed fields and
relationship queries, as reusable parts an operation switches on with :class:`Collection`."""

from .aggregate import AggregateExpr, AggregationSupport, Aggregator, aggregate, parse_aggregate
from .collection import (
    Collection,
    CollectionQuery,
    CollectionRuntime,
    Item,
    QueryBackend,
    QueryResult,
    apply_collection,
    collection_capabilities,
    item_schema_for,
)
from .computed import Computed
from .fields import FieldSelector, Projection, as_record, get_path
from .pagination import CURSOR_SECRET_KEY, CursorCodec, PageRequest
from .query import OPERATORS, Condition, SortKey, TextQuery
from .relationships import Relationships, query_relationships

__all__ = [
    "CURSOR_SECRET_KEY",
    "OPERATORS",
    "AggregateExpr",
    "AggregationSupport",
    "Aggregator",
    "Collection",
    "CollectionQuery",
    "CollectionRuntime",
    "Computed",
    "Condition",
    "CursorCodec",
    "FieldSelector",
    "Item",
    "PageRequest",
    "Projection",
    "QueryBackend",
    "QueryResult",
    "Relationships",
    "SortKey",
    "TextQuery",
    "aggregate",
    "apply_collection",
    "as_record",
    "collection_capabilities",
    "get_path",
    "item_schema_for",
    "parse_aggregate",
    "query_relationships",
]
