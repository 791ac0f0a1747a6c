/**
 * A query's complexity as Linear describes it: each scalar field 0.1 point, each object 1 point,
 * and a connection's nodes (or edges) multiplied by its `first` (50 when absent); rounded up.
 */
import {
  getNamedType,
  isObjectType,
  Kind,
  valueFromAST,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

const DEFAULT_FIRST = 50;

interface Walk {
  schema: GraphQLSchema;
  fragments: Map<string, FragmentDefinitionNode>;
  variables: Record<string, unknown>;
}

export function queryComplexity(
  schema: GraphQLSchema,
  op: OperationDefinitionNode,
  fragments: readonly FragmentDefinitionNode[],
  variables: Record<string, unknown>,
): number {
  const root = schema.getQueryType();
  if (!root) return 0;
  const w: Walk = { schema, fragments: new Map(fragments.map((f) => [f.name.value, f])), variables };
  return Math.ceil(selectionCost(w, op.selectionSet, root, 1));
}

function selectionCost(w: Walk, set: SelectionSetNode, parent: GraphQLObjectType, multiplier: number): number {
  let sum = 0;
  for (const sel of set.selections) {
    if (sel.kind === Kind.INLINE_FRAGMENT) {
      sum += selectionCost(w, sel.selectionSet, parent, multiplier);
      continue;
    }
    if (sel.kind === Kind.FRAGMENT_SPREAD) {
      const f = w.fragments.get(sel.name.value);
      if (f) sum += selectionCost(w, f.selectionSet, parent, multiplier);
      continue;
    }
    const field = parent.getFields()[sel.name.value];
    if (!field) continue;
    const type = getNamedType(field.type);
    if (!isObjectType(type) || !sel.selectionSet) {
      sum += 0.1 * multiplier;
      continue;
    }
    let inner = multiplier;
    if (type.name.endsWith('Connection')) {
      const firstArg = field.args.find((a) => a.name === 'first');
      const node = sel.arguments?.find((a) => a.name.value === 'first');
      const value = node && firstArg ? valueFromAST(node.value, firstArg.type, w.variables) : undefined;
      inner = multiplier * (typeof value === 'number' ? value : DEFAULT_FIRST);
    }
    sum += multiplier + connectionAware(w, sel.selectionSet, type, multiplier, inner);
  }
  return sum;
}

/** A connection's `nodes` / `edges` count `inner` times; its other fields (pageInfo) once. */
function connectionAware(
  w: Walk,
  set: SelectionSetNode,
  type: GraphQLObjectType,
  outer: number,
  inner: number,
): number {
  if (inner === outer) return selectionCost(w, set, type, outer);
  let sum = 0;
  for (const sel of set.selections) {
    if (sel.kind !== Kind.FIELD) continue;
    const field = type.getFields()[sel.name.value];
    const named = field ? getNamedType(field.type) : null;
    if (!field || !named || !isObjectType(named) || !sel.selectionSet) {
      sum += 0.1 * outer;
      continue;
    }
    const m = sel.name.value === 'nodes' || sel.name.value === 'edges' ? inner : outer;
    sum += m + selectionCost(w, sel.selectionSet, named, m);
  }
  return sum;
}
